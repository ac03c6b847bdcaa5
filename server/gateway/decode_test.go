package gateway

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/internal/fieldpath"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// FuzzRESTDecode feeds arbitrary bodies to the REST gateway's decoder: a body is a
// request or an error naming a field of it (or the body, for malformed JSON), and
// the decoder never panics.
func FuzzRESTDecode(f *testing.F) {
	m := withFieldErrors(&runtime.JSONPb{UnmarshalOptions: protojson.UnmarshalOptions{}})
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
