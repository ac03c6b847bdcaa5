package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"sync"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/internal/jsonreq"
	"github.com/stepcost/stepcost/internal/wire"
	"github.com/stepcost/stepcost/server/bounded"
)

// The REST gateway decodes a request body itself and answers a bad one with
// InvalidArgument and protojson's message, which gives a line and column and at
// most the last part of a field's name ("invalid value for int32 field seqLen").
// fieldJSON decodes the whole body strictly (trailing data is an error too) and, on
// failure, finds the field at that position (package jsonreq, which the command
// line's request files go through too), so that a REST client gets the same
// google.rpc.BadRequest violation ("training.seq_len": "must be an integer …") the
// service gives for a value out of range. The generated gateway code turns a
// decoding error into a status of its message only, so the violation travels to
// restErrors, the gateway's error handler, beside the request.

// fieldJSON is the gateway's JSON marshaler with field-naming decode errors.
type fieldJSON struct {
	*runtime.JSONPb
}

// Marshal writes v as JSONPb does, compacted (wire.Compact): the same answer is
// the same bytes from every build of the daemon, as from the CLI's --json.
func (m fieldJSON) Marshal(v any) ([]byte, error) {
	b, err := m.JSONPb.Marshal(v)
	if err != nil {
		return nil, err
	}
	return wire.Compact(b), nil
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
		if err := jsonreq.Unmarshal(m.UnmarshalOptions, data, msg); err != nil {
			var je *jsonreq.Error
			if !errors.As(err, &je) {
				return err
			}
			return keep(r, &decodeError{code: codes.InvalidArgument, field: je.Field, rule: je.Rule})
		}
		return nil
	})
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
