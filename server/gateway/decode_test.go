package gateway

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

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
		case !fieldExists(req.ProtoReflect().Descriptor(), e.field):
			t.Fatalf("%v: no field %q", e, e.field)
		}
	})
}

// fieldExists says whether path names a field of md the way errors do:
// "training.seq_len", "cluster.free_gpus[2].gpus[0]", "cluster.definition.gpu.peak_tflops.bf16"
// (a map's key is the rest of the path).
func fieldExists(md protoreflect.MessageDescriptor, path string) bool {
	parts := strings.Split(path, ".")
	for i, p := range parts {
		name, index, indexed := strings.Cut(p, "[")
		fd := md.Fields().ByName(protoreflect.Name(name))
		switch {
		case fd == nil, indexed && (!fd.IsList() || !listIndex.MatchString("["+index)):
			return false
		case fd.IsMap():
			return i < len(parts)-1 && fd.MapValue().Message() == nil || i == len(parts)-1
		case i == len(parts)-1:
			return true
		case fd.Message() == nil || fd.IsList() && !indexed:
			return false
		}
		md = fd.Message()
	}
	return false
}

var listIndex = regexp.MustCompile(`^\[\d+\]$`)
