package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/internal/fieldpath"
	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// FuzzRESTDecode feeds arbitrary bodies to the REST gateway's decoder: a body is a
// request or an error naming a field of it (or the body, for malformed JSON), and
// the decoder never panics.
func FuzzRESTDecode(f *testing.F) {
	m := withFieldErrors(&runtime.JSONPb{MarshalOptions: wire.JSONOptions(), UnmarshalOptions: protojson.UnmarshalOptions{}})
	reqs := []func() proto.Message{
		func() proto.Message { return &pb.EstimateStepRequest{} },
		func() proto.Message { return &pb.EstimatePlanRequest{} },
		func() proto.Message { return &pb.RankConfigsRequest{} },
		func() proto.Message { return &pb.SimulateCollectiveRequest{} },
	}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		req := reqs[int(which)%len(reqs)]()
		body := bytes.NewReader(data)
		err := m.NewDecoder(body).Decode(req)
		if err == nil {
			checkMarshal(t, m, req, reqs[int(which)%len(reqs)]())
		}
		if err == nil || errors.Is(err, io.EOF) {
			return
		}
		v, ok := pendingViolations.LoadAndDelete(body)
		if !ok {
			t.Fatalf("no violation kept for %v", err)
		}
		e := v.(*decodeError)
		switch {
		case e.code != codes.InvalidArgument || e.rule == "":
			t.Fatalf("%v: code %v", e, e.code)
		case e.field == "" || strings.HasPrefix(e.rule, "unknown field"):
		case !fieldpath.Exists(req.ProtoReflect().Descriptor(), e.field):
			t.Fatalf("%v: no field %q", e, e.field)
		}
	})
}

// checkMarshal holds the gateway's marshaler to what it writes of a message it
// decoded: compact JSON (wire.Compact: the same answer is the same bytes from
// every build), the same bytes each time, and read back by its decoder as the
// same message (empty is a fresh one to read it into).
func checkMarshal(t *testing.T, m runtime.Marshaler, msg, empty proto.Message) {
	t.Helper()
	b, err := m.Marshal(msg)
	if err != nil {
		t.Fatalf("decoded, but not written back: %v", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, b); err != nil || !bytes.Equal(compact.Bytes(), b) {
		t.Fatalf("not compact JSON (%v): %s", err, b)
	}
	if again, err := m.Marshal(msg); err != nil || !bytes.Equal(again, b) {
		t.Fatalf("written twice: %s, then %s (%v)", b, again, err)
	}
	body := bytes.NewReader(b)
	if err := m.NewDecoder(body).Decode(empty); err != nil {
		pendingViolations.Delete(body)
		t.Fatalf("its own output %s is refused: %v", b, err)
	}
	if back, err := m.Marshal(empty); err != nil || !bytes.Equal(back, b) {
		t.Fatalf("read back and written again: %s, then %s (%v)", b, back, err)
	}
}

// A body cut short (a client's Content-Length past what it sent, a proxy's
// truncation) is refused as ending inside a value at the line it ends on, as the
// command line says of a file cut short (package jsonreq reads both) and as a
// malformed body names its line: it was "request body: not a valid request:
// unexpected EOF".
func TestBodyCutShortNamesTheLine(t *testing.T) {
	m := withFieldErrors(&runtime.JSONPb{UnmarshalOptions: protojson.UnmarshalOptions{}})
	for _, c := range []struct {
		body string
		line int
	}{
		{`{"model":{`, 1},
		{`{"gpus":32`, 1},
		{`{"model":{"name":"lla`, 1},
		{"{\n  \"model\": {\"name\": \"llama3-8b\"},\n  \"gpus\": 3", 3},
		{"{\n  \"gpus\": 32,\n\n  \n", 2},
	} {
		body := strings.NewReader(c.body)
		err := m.NewDecoder(body).Decode(&pb.EstimatePlanRequest{})
		v, ok := pendingViolations.LoadAndDelete(body)
		if !ok {
			t.Fatalf("%q: %v, no violation kept", c.body, err)
		}
		e := v.(*decodeError)
		want := fmt.Sprintf("request body: ends inside a value at line %d (cut short?)", c.line)
		if e.code != codes.InvalidArgument || e.Error() != want {
			t.Errorf("%q: %v %q; want %q", c.body, e.code, e.Error(), want)
		}
	}
}

// shortBody is a request body whose connection ends before its Content-Length, as
// net/http reads it: the bytes sent, then io.ErrUnexpectedEOF.
type shortBody struct{ r io.Reader }

func (b *shortBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// A body whose connection ends before its Content-Length says so, naming the body,
// where the gateway answered a bare "unexpected EOF".
func TestBodyShorterThanItsLength(t *testing.T) {
	m := withFieldErrors(&runtime.JSONPb{UnmarshalOptions: protojson.UnmarshalOptions{}})
	body := &shortBody{strings.NewReader(`{"gpus": 32}`)}
	err := m.NewDecoder(body).Decode(&pb.EstimatePlanRequest{})
	v, ok := pendingViolations.LoadAndDelete(io.Reader(body))
	if !ok {
		t.Fatalf("%v, no violation kept", err)
	}
	want := "request body: ends after 12 bytes, before the length its Content-Length announced (cut short?)"
	if e := v.(*decodeError); e.code != codes.InvalidArgument || e.Error() != want {
		t.Errorf("%v %q; want %q", e.code, e.Error(), want)
	}
}

// A number written with a leading zero (0256, which JSON does not allow) is
// refused quoting it as sent, and saying why: it was echoed as the "0" the
// tokenizer stopped at ("training.global_batch: must be a 64-bit integer … (got
// 0)", "layout.tp: … (got 0)" for 032), a value the caller did not send; and the
// string "0256" was refused as not "a string of digits".
func TestLeadingZerosQuotedAsSent(t *testing.T) {
	m := withFieldErrors(&runtime.JSONPb{UnmarshalOptions: protojson.UnmarshalOptions{}})
	for _, c := range []struct{ body, field, got string }{
		{`{"training": {"global_batch": 0256}}`, "training.global_batch", "(got 0256)"},
		{`{"training": {"global_batch": "0256"}}`, "training.global_batch", `(got "0256")`},
		{`{"gpus": -0256}`, "gpus", "(got -0256)"},
		{`{"constraints": {"tp": [1, 02]}}`, "constraints.tp[1]", "(got 02)"},
		{`{"slow_gpu_speed": 00.5}`, "slow_gpu_speed", "(got 00.5)"},
	} {
		body := strings.NewReader(c.body)
		err := m.NewDecoder(body).Decode(&pb.EstimatePlanRequest{})
		v, ok := pendingViolations.LoadAndDelete(body)
		if !ok {
			t.Fatalf("%s: %v, no violation kept", c.body, err)
		}
		e := v.(*decodeError)
		if e.field != c.field || !strings.Contains(e.rule, c.got) || !strings.Contains(e.rule, "leading zero") {
			t.Errorf("%s: %q; want %s quoting %s and saying why (leading zeros)", c.body, e.Error(), c.field, c.got)
		}
	}
}

// A number JSON's grammar refuses but protojson's reader takes — an exponent
// without digits, 32e — is malformed JSON, refused naming where: {"gpus": 32e} was
// answered as 32 GPUs, and 8E as 8.
func TestExponentWithoutDigitsIsMalformed(t *testing.T) {
	m := withFieldErrors(&runtime.JSONPb{UnmarshalOptions: protojson.UnmarshalOptions{}})
	for _, c := range []struct{ body, want string }{
		{`{"gpus": 32e}`, "request body: malformed JSON at line 1, column 13: invalid character '}' in exponent of numeric literal"},
		{"{\n  \"top_k\": 3,\n  \"gpus\": 8E\n}", "request body: malformed JSON at line 3, column 13: invalid character '\\n' in exponent of numeric literal"},
		{`{"constraints": {"tp": [2e, 4]}}`, "request body: malformed JSON at line 1, column 27: invalid character ',' in exponent of numeric literal"},
	} {
		body := strings.NewReader(c.body)
		req := &pb.EstimatePlanRequest{}
		err := m.NewDecoder(body).Decode(req)
		v, ok := pendingViolations.LoadAndDelete(body)
		if !ok {
			t.Errorf("%q: %v, no violation kept (decoded %v)", c.body, err, req)
			continue
		}
		if e := v.(*decodeError); e.code != codes.InvalidArgument || e.Error() != c.want {
			t.Errorf("%q: %v %q; want %q", c.body, e.code, e.Error(), c.want)
		}
	}
}
