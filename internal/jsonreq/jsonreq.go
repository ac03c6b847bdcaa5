// Package jsonreq decodes an API request from JSON strictly (protojson, then
// JSON's grammar, then numbers a double would read as 0) and, when the JSON is not
// a valid request, names the field at fault by its path in the request
// ("training.seq_len") with the rule it broke, as the service names a value out of
// range. The REST gateway decodes request bodies with it, and the command line its
// request files (estimate --in, rank --in, load --in), so that both say the same
// of the same JSON.
//
// protojson's own errors give a line and column and at most the last part of a
// field's name ("invalid value for int32 field seqLen"), in words it marks as
// unstable; Unmarshal finds the field at that position.
package jsonreq

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Error is JSON that is not a valid request: the field at fault, by its path in
// the request ("" when no field is to blame: malformed JSON outside any field's
// value), and the rule it broke.
type Error struct {
	Field string
	Rule  string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Rule
	}
	return e.Field + ": " + e.Rule
}

// Unmarshal decodes data, one JSON object, into msg with opts. An error is an
// *Error: protojson's refusal explained at the field it stopped at, JSON protojson
// takes but JSON's grammar refuses (an exponent without digits, 32e), or a number
// a double holds as 0 though it is not 0.
func Unmarshal(opts protojson.UnmarshalOptions, data []byte, msg proto.Message) error {
	md := msg.ProtoReflect().Descriptor()
	if err := opts.Unmarshal(data, msg); err != nil {
		return explain(data, md, err)
	}
	if e := notJSON(data); e != nil {
		return e
	}
	if e := underflow(data, md); e != nil {
		return e
	}
	return nil
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
func underflow(data []byte, md protoreflect.MessageDescriptor) *Error {
	if !mayUnderflow.Match(data) {
		return nil
	}
	var e *Error
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
		e = &Error{Field: at.path,
			Rule: fmt.Sprintf("must be 0 or a number of magnitude at least %g, the smallest a double holds (got %s, which would be read as 0)",
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

// protojsonError is protojson's "proto: [syntax error ](line L:C): what".
var protojsonError = regexp.MustCompile(`^proto:\s+(syntax error\s+)?\(line (\d+):(\d+)\):\s+(.*)$`)

// explain turns a protojson error into the field at fault and the rule it broke.
func explain(data []byte, md protoreflect.MessageDescriptor, err error) *Error {
	text := strings.ReplaceAll(err.Error(), "\u00a0", " ") // protojson randomises its spaces
	m := protojsonError.FindStringSubmatch(text)
	if m == nil && strings.HasSuffix(text, "unexpected EOF") {
		// A body cut short: protojson names the line of every other fault, not this
		// one: its last line.
		return &Error{
			Rule: fmt.Sprintf("ends inside a value at line %d (cut short?)", 1+bytes.Count(bytes.TrimRight(data, " \t\r\n"), []byte("\n")))}
	}
	if m == nil {
		return &Error{Rule: "not a valid request: " + strings.TrimPrefix(text, "proto: ")}
	}
	line, _ := strconv.Atoi(m[2])
	col, _ := strconv.Atoi(m[3])
	what := m[4]
	at := locate(data, md, offsetOf(data, line, col))
	e := &Error{Field: at.path}
	got := ""
	if i := strings.LastIndex(what, ": "); i >= 0 {
		got = what[i+2:]
	}
	switch {
	case strings.HasPrefix(what, "unknown field"):
		e.Rule = what // protojson's words, `unknown field "speed"`, which clients may match
		if at.parent != nil {
			e.Rule += fmt.Sprintf(": %s has %s", at.parent.FullName(), fieldNames(at.parent))
		}
	case strings.HasPrefix(what, "duplicate field"):
		e.Rule = "is given twice"
	case strings.Contains(what, "oneof") && strings.Contains(what, "is already set"):
		e.Rule = "only one of " + oneofNames(at.fd) + " may be given"
	case strings.Contains(what, "UTF-8") && at.fd != nil:
		e.Rule = "must be valid UTF-8 text" // the value is not echoed: it is not text
	case strings.HasPrefix(what, "invalid value for"), m[1] != "" && at.fd != nil && at.value && at.exact:
		e.Rule = typeRule(at.fd, at.inList)
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
			e.Rule += " (got " + got + ")"
		}
		if lead {
			e.Rule += ": JSON writes a number without leading zeros (RFC 8259 section 6)"
		}
	default:
		e.Rule = fmt.Sprintf("malformed JSON at line %d, column %d: %s", line, col, what)
		if !at.exact || at.fd == nil {
			e.Field = "" // the JSON broke before a field was reached, or in a key that is none
		}
	}
	if at.path == "" && !strings.HasPrefix(e.Rule, "malformed") {
		e.Rule = fmt.Sprintf("%s at line %d, column %d", e.Rule, line, col)
	}
	return e
}

// notJSON refuses a body protojson took that JSON's grammar does not allow: its
// reader takes a number with an exponent and no digits after it (32e, 8E), which
// was answered as 32 and 8. encoding/json checks the grammar (RFC 8259); the fault
// is named at its line and column, as a malformed body's is.
func notJSON(data []byte) *Error {
	if json.Valid(data) {
		return nil
	}
	var se *json.SyntaxError
	if err := json.Unmarshal(data, new(json.RawMessage)); !errors.As(err, &se) {
		return &Error{Rule: "malformed JSON"}
	}
	at := min(max(int(se.Offset)-1, 0), len(data)) // the byte the checker stopped at
	start := bytes.LastIndexByte(data[:at], '\n') + 1
	line := 1 + bytes.Count(data[:start], []byte("\n"))
	col := 1 + utf8.RuneCount(data[start:at])
	return &Error{Rule: fmt.Sprintf("malformed JSON at line %d, column %d: %s", line, col, se.Error())}
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
