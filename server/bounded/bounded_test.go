package bounded

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

func TestText(t *testing.T) {
	if got := Text("short", 10); got != "short" {
		t.Errorf("short: %q", got)
	}
	long := strings.Repeat("é", 300) // 600 bytes
	got := Text(long, 101)
	if !utf8.ValidString(got) || !strings.HasPrefix(got, strings.Repeat("é", 50)+"…") || !strings.Contains(got, "(600 bytes)") {
		t.Errorf("cut: %q", got)
	}
	if got := Text("a\xffb", 10); got != "a\uFFFDb" {
		t.Errorf("invalid UTF-8: %q", got)
	}
}

// A status of 25 000 violations, each echoing a long value, and a message of 10 MB
// with invalid UTF-8 (details cannot hold any: they are encoded), comes out as the
// first MaxViolations, counted in the message, all valid text, small.
func TestStatus(t *testing.T) {
	vs := make([]*errdetails.BadRequest_FieldViolation, 25_000)
	for i := range vs {
		vs[i] = &errdetails.BadRequest_FieldViolation{Field: fmt.Sprintf("gpu.peak_tflops.x%06d", i),
			Description: "unknown dtype (got \"" + strings.Repeat("é", 1000) + "\")"}
	}
	st, err := status.New(codes.InvalidArgument, strings.Repeat("m\xff", 5<<20)).WithDetails(&errdetails.BadRequest{FieldViolations: vs})
	if err != nil {
		t.Fatal(err)
	}
	b := Status(st)
	if n := proto.Size(b.Proto()); n > 32<<10 {
		t.Errorf("%d B", n)
	}
	if b.Code() != codes.InvalidArgument || !strings.Contains(b.Message(), "(25000 violations; the first 20 are listed)") || !utf8.ValidString(b.Message()) {
		t.Errorf("message %.300q", b.Message())
	}
	br := b.Details()[0].(*errdetails.BadRequest)
	if len(br.GetFieldViolations()) != MaxViolations || br.GetFieldViolations()[0].GetField() != "gpu.peak_tflops.x000000" {
		t.Errorf("violations %v", br.GetFieldViolations()[:2])
	}
	for _, v := range br.GetFieldViolations() {
		if !utf8.ValidString(v.GetDescription()) || len(v.GetDescription()) > MaxText+32 {
			t.Errorf("description %q", v.GetDescription())
		}
	}
	small := status.New(codes.NotFound, "model.name: unknown model")
	if Status(small) != small {
		t.Error("a small status is rebuilt")
	}
}
