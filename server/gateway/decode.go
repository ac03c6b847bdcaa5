package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/stepcost/stepcost/server/bounded"
)

// The REST gateway decodes a request body itself and answers a bad one with
// InvalidArgument and protojson's message, which gives a line and column and at
// most the last part of a field's name ("invalid value for int32 field seqLen").
// fieldJSON decodes the whole body strictly (trailing data is an error too) and, on
// failure, finds the field at that position, so that a REST client gets the same
// google.rpc.BadRequest violation ("training.seq_len": "must be an integer …") the
// service gives for a value out of range. The generated gateway code turns a
// decoding error into a status of its message only, so the violation travels to
// restErrors, the gateway's error handler, beside the request.

// fieldJSON is the gateway's JSON marshaler with field-naming decode errors.
type fieldJSON struct {
	*runtime.JSONPb
}

// withFieldErrors wraps the gateway's marshaler.
func withFieldErrors(m *runtime.JSONPb) runtime.Marshaler { return fieldJSON{m} }

// pendingViolations holds the violation of a body that failed to decode until the
// error handler of its request picks it up, keyed by the body.
var pendingViolations sync.Map // io.Reader → *decodeError

// decodeError is a request body that is not a valid request.
type decodeError struct {
	code  codes.Code
	field string // "" when no field is to blame (malformed JSON at the top level)
	rule  string
}

func (e *decodeError) Error() string {
	if e.field == "" {
		return "request body: " + e.rule
	}
	return e.field + ": " + e.rule
}

func (m fieldJSON) NewDecoder(r io.Reader) runtime.Decoder {
	return runtime.DecoderFunc(func(v any) error {
		msg, ok := v.(proto.Message)
		if !ok {
			// A body that is one field of the request (the pictures: body "estimate")
			// comes as the address of that field, a pointer to a message pointer:
			// decoded the same way, into a new message.
			if msg, ok = newField(v); !ok {
				return m.JSONPb.NewDecoder(r).Decode(v)
			}
		}
		data, err := io.ReadAll(r)
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				return keep(r, &decodeError{code: codes.ResourceExhausted,
					rule: fmt.Sprintf("larger than the service's limit of %d bytes (flag --max-request-bytes)", tooLarge.Limit)})
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				// The connection ended before the Content-Length it announced: the
				// gateway said a bare "unexpected EOF".
				return keep(r, &decodeError{code: codes.InvalidArgument,
					rule: fmt.Sprintf("ends after %d bytes, before the length its Content-Length announced (cut short?)", len(data))})
			}
			return err
		}
		if enc := wideEncoding(data); enc != "" {
			return keep(r, &decodeError{code: codes.InvalidArgument,
				rule: fmt.Sprintf("%s text (it starts with that encoding's byte-order mark): send the JSON in UTF-8 (RFC 8259 section 8.1)", enc)})
		}
		// A UTF-8 byte-order mark is read past, as the command line reads its
		// files (RFC 8259 section 8.1 lets a parser ignore it): it was refused as
		// "malformed JSON at line 1, column 1: invalid value" and the invisible
		// mark. Positions in errors are then counted after it.
		data = bytes.TrimPrefix(data, utf8BOM)
		if len(bytes.TrimSpace(data)) == 0 {
			return io.EOF // no body: an empty request, as the gateway has it
		}
		if err := m.UnmarshalOptions.Unmarshal(data, msg); err != nil {
			return keep(r, explain(data, msg.ProtoReflect().Descriptor(), err))
		}
		if e := notJSON(data); e != nil {
			return keep(r, e)
		}
		if e := underflow(data, msg.ProtoReflect().Descriptor()); e != nil {
			return keep(r, e)
		}
		return nil
	})
}

// mayUnderflow finds, cheaply, what may be a number a double holds as 0 (its
// smallest magnitude is 4.9e-324): an exponent of -100 or less, or 20 zeros after
// a decimal point (a smaller exponent needs 25 leading zeros or more to reach
// -324). A body without one is not tokenized again.
var mayUnderflow = regexp.MustCompile(`[eE]-0*\d{3}|\.0{20}`)

// underflow refuses a number that is not zero but that protojson reads as 0, as
// Go's strconv.ParseFloat rounds one below a double's smallest magnitude
// (1e-400, 0.000…1 past 324 places): the field would read as unset, or be
// refused as "got 0", a value the caller did not send. It names the first such
// field of a float or double kind (as a number or a string, which protojson
// takes for one), with the number as sent.
func underflow(data []byte, md protoreflect.MessageDescriptor) *decodeError {
	if !mayUnderflow.Match(data) {
		return nil
	}
	var e *decodeError
	walk(data, md, func(tok json.Token, _ int64, at position) bool {
		var text string
		switch v := tok.(type) {
		case json.Number:
			text = string(v)
		case string:
			text = v
		default:
			return true
		}
		if fd := at.fd; fd == nil || !at.value || (fd.Kind() != protoreflect.DoubleKind && fd.Kind() != protoreflect.FloatKind) || !roundsToZero(text) {
			return true // a string that is not a number field's (a name), or a key
		}
		e = &decodeError{code: codes.InvalidArgument, field: at.path,
			rule: fmt.Sprintf("must be 0 or a number of magnitude at least %g, the smallest a double holds (got %s, which would be read as 0)",
				math.SmallestNonzeroFloat64, shorten([]byte(text)))}
		return false
	})
	return e
}

// roundsToZero says whether text is a number with a digit other than 0 in its
// mantissa that a double holds as 0.
func roundsToZero(text string) bool {
	f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	if err != nil || f != 0 {
		return false
	}
	mantissa, _, _ := strings.Cut(strings.ToLower(text), "e")
	return strings.ContainsAny(mantissa, "123456789")
}

// utf8BOM is the byte-order mark U+FEFF in UTF-8.
var utf8BOM = []byte("\uFEFF")

// wideEncoding names the UTF-16 or UTF-32 encoding whose byte-order mark data
// starts with, or "".
func wideEncoding(data []byte) string {
	for _, e := range []struct{ name, mark string }{
		// UTF-32LE first: its mark begins with UTF-16LE's.
		{"UTF-32LE", "\xff\xfe\x00\x00"}, {"UTF-32BE", "\x00\x00\xfe\xff"},
		{"UTF-16LE", "\xff\xfe"}, {"UTF-16BE", "\xfe\xff"},
	} {
		if bytes.HasPrefix(data, []byte(e.mark)) {
			return e.name
		}
	}
	return ""
}

// newField sets *v, a pointer to a nil message pointer, to a new message and
// returns it.
func newField(v any) (proto.Message, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Pointer {
		return nil, false
	}
	field := rv.Elem()
	if _, ok := reflect.Zero(field.Type()).Interface().(proto.Message); !ok {
		return nil, false
	}
	if field.IsNil() {
		field.Set(reflect.New(field.Type().Elem()))
	}
	msg, ok := field.Interface().(proto.Message)
	return msg, ok
}

func keep(body io.Reader, e *decodeError) error {
	if keyable(body) {
		pendingViolations.Store(body, e)
	}
	return e
}

// keyable says whether a body can be a map key (a body is a pointer in practice).
func keyable(body io.Reader) bool {
	t := reflect.TypeOf(body)
	return t != nil && t.Comparable()
}

// restErrors is the gateway's error handler: a body that failed to decode gets its
// code and field violation back (see fieldJSON); every other error is answered as
// the gateway does by default.
func restErrors(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	if !keyable(r.Body) {
		runtime.DefaultHTTPErrorHandler(ctx, mux, m, w, r, err)
		return
	}
	if v, ok := pendingViolations.LoadAndDelete(r.Body); ok {
		e := v.(*decodeError)
		err = e.status().Err()
		if e.code == codes.ResourceExhausted {
			err = &runtime.HTTPStatusError{HTTPStatus: http.StatusRequestEntityTooLarge, Err: err}
		}
	}
	runtime.DefaultHTTPErrorHandler(ctx, mux, m, w, r, boundError(err))
}

// boundError bounds the status in err (package bounded), also inside the
// gateway's HTTPStatusError: every text valid UTF-8 (or the gateway cannot
// marshal the answer, and says 500), and small.
func boundError(err error) error {
	var he *runtime.HTTPStatusError
	if errors.As(err, &he) {
		return &runtime.HTTPStatusError{HTTPStatus: he.HTTPStatus, Err: bounded.Error(he.Err)}
	}
	return bounded.Error(err)
}

// status is the answer to a body that failed to decode: its code and, when a
// field is to blame, the field's violation; bounded.
func (e *decodeError) status() *status.Status {
	st := status.New(e.code, e.Error())
	if e.field != "" {
		// Valid UTF-8 first (a value shortened mid-rune, a key that is not text), or
		// the details cannot be encoded and would be dropped.
		v := &errdetails.BadRequest_FieldViolation{Field: bounded.Text(e.field, bounded.MaxText), Description: bounded.Text(e.rule, bounded.MaxText)}
		if d, derr := st.WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{v}}); derr == nil {
			st = d
		}
	}
	return bounded.Status(st)
}

// getPaths are the gateway's paths read with GET (and HEAD); the others take POST.
var getPaths = []string{"/v1/catalog", "/healthz"}

// restRoutingErrors answers a request the gateway routes nowhere. A known path with
// the wrong method is 405 Method Not Allowed (the gateway's default is 501, which
// says the server lacks the feature), with an Allow header naming the methods the
// path takes (GET and HEAD for /v1/catalog and /healthz: /healthz was said to take
// POST); the rest is answered as the gateway does by default.
func restRoutingErrors(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	if httpStatus != http.StatusMethodNotAllowed {
		runtime.DefaultRoutingErrorHandler(ctx, mux, m, w, r, httpStatus)
		return
	}
	use, allow := http.MethodPost, http.MethodPost
	if slices.Contains(getPaths, r.URL.Path) {
		use, allow = http.MethodGet, "GET, HEAD"
	}
	w.Header().Set("Allow", allow)
	err := status.Errorf(codes.Unimplemented, "method %s not allowed on %s: use %s", r.Method, r.URL.Path, use)
	runtime.DefaultHTTPErrorHandler(ctx, mux, m, w, r, &runtime.HTTPStatusError{HTTPStatus: http.StatusMethodNotAllowed, Err: err})
}

// protojsonError is protojson's "proto: [syntax error ](line L:C): what".
var protojsonError = regexp.MustCompile(`^proto:\s+(syntax error\s+)?\(line (\d+):(\d+)\):\s+(.*)$`)

// explain turns a protojson error into the field at fault and the rule it broke.
func explain(data []byte, md protoreflect.MessageDescriptor, err error) *decodeError {
	text := strings.ReplaceAll(err.Error(), "\u00a0", " ") // protojson randomises its spaces
	m := protojsonError.FindStringSubmatch(text)
	if m == nil && strings.HasSuffix(text, "unexpected EOF") {
		// A body cut short: protojson names the line of every other fault, not this
		// one. Its last line, as the command line says of a file (cli's cutShort).
		return &decodeError{code: codes.InvalidArgument,
			rule: fmt.Sprintf("ends inside a value at line %d (cut short?)", 1+bytes.Count(bytes.TrimRight(data, " \t\r\n"), []byte("\n")))}
	}
	if m == nil {
		return &decodeError{code: codes.InvalidArgument, rule: "not a valid request: " + strings.TrimPrefix(text, "proto: ")}
	}
	line, _ := strconv.Atoi(m[2])
	col, _ := strconv.Atoi(m[3])
	what := m[4]
	at := locate(data, md, offsetOf(data, line, col))
	e := &decodeError{code: codes.InvalidArgument, field: at.path}
	got := ""
	if i := strings.LastIndex(what, ": "); i >= 0 {
		got = what[i+2:]
	}
	switch {
	case strings.HasPrefix(what, "unknown field"):
		e.rule = what // protojson's words, `unknown field "speed"`, which clients may match
		if at.parent != nil {
			e.rule += fmt.Sprintf(": %s has %s", at.parent.FullName(), fieldNames(at.parent))
		}
	case strings.HasPrefix(what, "duplicate field"):
		e.rule = "is given twice"
	case strings.Contains(what, "oneof") && strings.Contains(what, "is already set"):
		e.rule = "only one of " + oneofNames(at.fd) + " may be given"
	case strings.Contains(what, "UTF-8") && at.fd != nil:
		e.rule = "must be valid UTF-8 text" // the value is not echoed: it is not text
	case strings.HasPrefix(what, "invalid value for"), m[1] != "" && at.fd != nil && at.value && at.exact:
		e.rule = typeRule(at.fd, at.inList)
		if got == "" && strings.HasPrefix(what, "invalid value ") {
			// protojson's syntax error quotes the value as sent (0256); the
			// tokenizer behind at.token stopped at its "0".
			got = strings.TrimPrefix(what, "invalid value ")
		}
		if got == "" {
			got = at.token
		}
		lead := leadingZero.MatchString(got)
		got = shorten([]byte(got))
		if got != "" {
			e.rule += " (got " + got + ")"
		}
		if lead {
			e.rule += ": JSON writes a number without leading zeros (RFC 8259 section 6)"
		}
	default:
		e.rule = fmt.Sprintf("malformed JSON at line %d, column %d: %s", line, col, what)
		if !at.exact || at.fd == nil {
			e.field = "" // the JSON broke before a field was reached, or in a key that is none
		}
	}
	if at.path == "" && !strings.HasPrefix(e.rule, "malformed") {
		e.rule = fmt.Sprintf("%s at line %d, column %d", e.rule, line, col)
	}
	return e
}

// notJSON refuses a body protojson took that JSON's grammar does not allow: its
// reader takes a number with an exponent and no digits after it (32e, 8E), which
// was answered as 32 and 8. encoding/json checks the grammar (RFC 8259); the fault
// is named at its line and column, as a malformed body's is.
func notJSON(data []byte) *decodeError {
	if json.Valid(data) {
		return nil
	}
	var se *json.SyntaxError
	if err := json.Unmarshal(data, new(json.RawMessage)); !errors.As(err, &se) {
		return &decodeError{code: codes.InvalidArgument, rule: "malformed JSON"}
	}
	at := min(max(int(se.Offset)-1, 0), len(data)) // the byte the checker stopped at
	start := bytes.LastIndexByte(data[:at], '\n') + 1
	line := 1 + bytes.Count(data[:start], []byte("\n"))
	col := 1 + utf8.RuneCount(data[start:at])
	return &decodeError{code: codes.InvalidArgument, rule: fmt.Sprintf("malformed JSON at line %d, column %d: %s", line, col, se.Error())}
}

// leadingZero matches a number, bare or in a string, with a leading zero (0256,
// "-02"), which JSON's grammar does not allow.
var leadingZero = regexp.MustCompile(`^"?-?0[0-9]`)

// offsetOf converts protojson's line and column (counted in runes from 1) to a byte
// offset.
func offsetOf(data []byte, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return len(data)
		}
		off += i + 1
	}
	for c := 1; c < col && off < len(data); c++ {
		_, n := utf8.DecodeRune(data[off:])
		off += n
	}
	return off
}

// position is what locate found at an offset of a body.
type position struct {
	path   string                         // the field's path ("" at the top level)
	fd     protoreflect.FieldDescriptor   // the field, when known
	parent protoreflect.MessageDescriptor // the message the field is (or would be) in
	value  bool                           // the offset is at the field's value, not its key
	inList bool                           // … at an element of a repeated field, or a map's value
	token  string                         // the JSON token there, shortened
	exact  bool                           // the token is at the offset (not the last before a syntax error)
}

// frame is an open JSON object or array while locating.
type frame struct {
	path  string
	md    protoreflect.MessageDescriptor // an object that is a message
	mapFD protoreflect.FieldDescriptor   // an object that is a map field
	list  protoreflect.FieldDescriptor   // an array that is a repeated field
	array bool
	index int
	key   string // in an object: the key whose value comes next, "" before a key
	keyOK bool
	keyFD protoreflect.FieldDescriptor
}

// slot is the path, field and message of the value about to be read in f.
func (f *frame) slot() (path string, fd protoreflect.FieldDescriptor, inList bool) {
	switch {
	case f.array:
		return fmt.Sprintf("%s[%d]", f.path, f.index), f.list, true
	case f.mapFD != nil:
		return join(f.path, f.key), f.mapFD.MapValue(), true
	case f.keyFD != nil:
		return join(f.path, string(f.keyFD.Name())), f.keyFD, false
	}
	return join(f.path, f.key), nil, false
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// locate walks the body's JSON tokens up to off and says which field is there.
func locate(data []byte, md protoreflect.MessageDescriptor, off int) position {
	var found position
	walk(data, md, func(tok json.Token, end int64, here position) bool {
		if end > int64(off) {
			found = here
			return false
		}
		return true
	})
	return found
}

// walk reads the body's JSON tokens, calling visit with each, the offset after
// it and the field it is at (exact), until visit returns false; at a syntax error
// it calls visit with the last position read (not exact) and a nil token.
func walk(data []byte, md protoreflect.MessageDescriptor, visit func(tok json.Token, end int64, here position) bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*frame
	var last position
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			visit(nil, math.MaxInt64, last)
			return
		}
		end := dec.InputOffset()
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		isKey := top != nil && !top.array && !top.keyOK
		if _, ok := tok.(json.Delim); ok {
			isKey = false
		}
		here := position{token: shorten(data[start:end])}
		switch {
		case top == nil:
			here.parent = md
		case isKey:
			key, _ := tok.(string)
			top.key, top.keyOK = key, true
			top.keyFD = nil
			if top.md != nil {
				top.keyFD = fieldByName(top.md, key)
			}
			here.path, here.fd, _ = top.slot()
			if top.keyFD == nil && top.mapFD == nil {
				here.path = join(top.path, key)
			}
			here.parent = top.md
		default:
			here.path, here.fd, here.inList = top.slot()
			here.parent, here.value = top.md, true
		}
		at := here
		at.exact = true
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') && top != nil {
			at = position{path: top.path, parent: top.md, token: here.token, exact: true}
		}
		if !visit(tok, end, at) {
			return
		}
		last = here
		switch tok {
		case json.Delim('{'), json.Delim('['):
			f := &frame{path: here.path, array: tok == json.Delim('[')}
			switch fd := here.fd; {
			case top == nil:
				f.md = md
			case fd == nil:
			case f.array && fd.IsList():
				f.list = fd
			case !f.array && fd.IsMap() && !here.inList:
				f.mapFD = fd
			case !f.array && fd.Message() != nil && (!fd.IsList() || here.inList):
				f.md = fd.Message()
			}
			stack = append(stack, f)
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				advance(stack[len(stack)-1])
			}
		default:
			if !isKey && top != nil {
				advance(top)
			}
		}
	}
}

// advance moves f past the value just read.
func advance(f *frame) {
	if f.array {
		f.index++
	} else {
		f.key, f.keyOK, f.keyFD = "", false, nil
	}
}

func fieldByName(md protoreflect.MessageDescriptor, key string) protoreflect.FieldDescriptor {
	if fd := md.Fields().ByJSONName(key); fd != nil {
		return fd
	}
	return md.Fields().ByName(protoreflect.Name(key))
}

func shorten(b []byte) string {
	s := strings.TrimLeft(string(b), " \t\r\n,:")
	switch {
	case strings.HasPrefix(s, "{"):
		return "an object"
	case strings.HasPrefix(s, "["):
		return "an array"
	}
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

func fieldNames(md protoreflect.MessageDescriptor) string {
	if md == nil {
		return ""
	}
	names := make([]string, md.Fields().Len())
	for i := range names {
		names[i] = string(md.Fields().Get(i).Name())
	}
	return strings.Join(names, ", ")
}

func oneofNames(fd protoreflect.FieldDescriptor) string {
	if fd == nil || fd.ContainingOneof() == nil {
		return "the alternatives"
	}
	o := fd.ContainingOneof()
	names := make([]string, o.Fields().Len())
	for i := range names {
		names[i] = string(o.Fields().Get(i).Name())
	}
	return strings.Join(names, ", ")
}

// typeRule says what JSON a field takes.
func typeRule(fd protoreflect.FieldDescriptor, element bool) string {
	if !element && fd.IsList() {
		return "must be an array"
	}
	if !element && fd.IsMap() {
		return "must be an object"
	}
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return "must be true or false"
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return "must be an integer between -2147483648 and 2147483647"
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return "must be a 64-bit integer (a number, or a string of digits)"
	case protoreflect.DoubleKind, protoreflect.FloatKind:
		return "must be a number"
	case protoreflect.StringKind:
		return "must be a string"
	case protoreflect.EnumKind:
		vs := fd.Enum().Values()
		names := make([]string, 0, vs.Len())
		for i := range vs.Len() {
			if vs.Get(i).Number() != 0 {
				names = append(names, string(vs.Get(i).Name()))
			}
		}
		return "must be one of " + strings.Join(names, ", ")
	case protoreflect.MessageKind:
		return "must be an object"
	}
	return "has the wrong type"
}
