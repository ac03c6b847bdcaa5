package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Hostile requests against the running daemon: each answer is bounded, names the
// field at fault, and leaves the other callers' requests alone.

// restCall posts body to the daemon's path and returns the status and answer.
func restCall(t *testing.T, d daemon, path string, body []byte) (int, []byte) {
	t.Helper()
	code, _, b := restDo(t, d, http.MethodPost, path, "Content-Type", "application/json", bytes.NewReader(body))
	return code, b
}

// restDo sends body to the daemon's path with the method and one header (none when
// value is empty) and returns the status, the answer's headers and the answer.
func restDo(t *testing.T, d daemon, method, path, header, value string, body io.Reader) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+d.httpAddr+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if value != "" {
		req.Header.Set(header, value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// decodeStatus is b, a REST error answer, decoded (restError).
func decodeStatus(t *testing.T, b []byte) restError {
	t.Helper()
	var s restError
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("error answer is not a status: %v: %.300s", err, b)
	}
	return s
}

// manyDtypes is a cluster definition whose GPU has n peak_tflops entries, none of
// them a precision: n violations.
func manyDtypes(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"model": {"name": "llama3-70b"}, "training": {"seq_len": 8192, "global_batch": 512},
		"layout": {"tp": 8, "pp": 2, "dp": 4, "micro_batch": 1}, "cluster": {"definition": {"base": "dgx-h100", "gpu": {"peak_tflops": {`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"x%06d": 1`, i)
	}
	b.WriteString(`}}}}}`)
	return []byte(b.String())
}

// A body of 100 000 bad map keys (1.5 MB, under the 4 MB limit) is answered with a
// bounded error — the first violations and a count — and the REST calls running
// beside it all succeed: its error cannot tear down the gateway's connection.
func TestHugeErrorIsBoundedAndHarmsNoOne(t *testing.T) {
	d := secureDaemon(t, func(c *Config) { c.CacheMaxBytes = 0 })
	attack := manyDtypes(100_000)
	if len(attack) > DefaultConfig().MaxRequestBytes {
		t.Fatalf("attack body %d B is over the request limit", len(attack))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := map[int]int{}
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, b := restCall(t, d, "/v1/plans:estimate", []byte(with(okPlan, "gpus", 8+8*(i%4))))
			if code != http.StatusOK {
				mu.Lock()
				failed[code]++
				mu.Unlock()
				t.Logf("bystander: %d %.200s", code, b)
			}
		}()
	}
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, b := restCall(t, d, "/v1/steps:estimate", attack)
			if code != http.StatusBadRequest || len(b) > maxErrorAnswer {
				t.Errorf("attack: %d, %d B answer (want 400 within %d B)", code, len(b), maxErrorAnswer)
				return
			}
			s := decodeStatus(t, b)
			if len(s.Details) != 1 || len(s.Details[0].FieldViolations) == 0 || len(s.Details[0].FieldViolations) > 100 {
				t.Errorf("attack: details %.300s", b)
			} else if f := s.Details[0].FieldViolations[len(s.Details[0].FieldViolations)-1].Field; !strings.HasPrefix(f, "cluster.definition.gpu.peak_tflops.x") {
				t.Errorf("attack: last violation listed names %q", f)
			}
			if m := regexp.MustCompile(`\((\d+) violations`).FindStringSubmatch(s.Message); m == nil || len(m[1]) < 6 {
				t.Errorf("attack: the message does not count the violations: %.300s", s.Message)
			}
		}()
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Errorf("bystanders failed: %v (of 24)", failed)
	}
}

// maxErrorAnswer bounds the REST answer to any bad request (the message, the
// first maxViolations violations, each bounded, and JSON's quoting).
const maxErrorAnswer = 64 << 10

// A 3 MB model name is refused by field and not echoed (it was, whole, in a
// NOT_FOUND of 6 MB), over REST and gRPC.
func TestEchoedValuesAreBounded(t *testing.T) {
	d := secureDaemon(t, nil)
	long := strings.Repeat("m", 3<<20)
	code, b := restCall(t, d, "/v1/steps:estimate", []byte(with(okStep, "model", map[string]any{"name": long})))
	if code != http.StatusBadRequest || len(b) > maxErrorAnswer {
		t.Errorf("REST: %d, %d B answer", code, len(b))
	}
	if s := decodeStatus(t, b); len(s.Details) == 0 || len(s.Details[0].FieldViolations) == 0 || s.Details[0].FieldViolations[0].Field != "model.name" {
		t.Errorf("REST: %.300s", b)
	}
	conn := grpcConn(t, d)
	req := stepRequest()
	req.Model = &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: long}}
	_, err := pb.NewStepcostServiceClient(conn).EstimateStep(context.Background(), req)
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument || len(st.Message()) > maxErrorAnswer || proto.Size(st.Proto()) > maxErrorAnswer {
		t.Errorf("gRPC: %v, message %d B, status %d B", st.Code(), len(st.Message()), proto.Size(st.Proto()))
	}
}

// What-ifs at the edge of a double: refused by field, never an infinite or absurd
// answer.
func TestWhatIfBounds(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx := context.Background()
	for _, tc := range []struct {
		field string
		v     float64
		set   func(*pb.EstimateStepRequest, float64)
	}{
		{"slow_gpu_speed", 5e-324, func(r *pb.EstimateStepRequest, v float64) { r.SlowGpuSpeed = v }},
		{"slow_gpu_speed", 1e-300, func(r *pb.EstimateStepRequest, v float64) { r.SlowGpuSpeed = v }},
		{"degraded_nic_speed", 5e-324, func(r *pb.EstimateStepRequest, v float64) { r.DegradedNicSpeed = v }},
		{"degraded_nic_speed", 1e-300, func(r *pb.EstimateStepRequest, v float64) { r.DegradedNicSpeed = v }},
		{"degraded_link_speed", 5e-324, func(r *pb.EstimateStepRequest, v float64) { r.DegradedLinkSpeed = v }},
		{"degraded_link_speed", 1e-300, func(r *pb.EstimateStepRequest, v float64) { r.DegradedLinkSpeed = v }},
	} {
		req := stepRequest()
		tc.set(req, tc.v)
		resp, err := c.EstimateStep(ctx, req)
		if err == nil {
			t.Errorf("%s %v: answered, step %v s", tc.field, tc.v, resp.GetEstimate().GetStepTimeS())
			continue
		}
		violationOf(t, err, codes.InvalidArgument, tc.field)
		plan := &pb.EstimatePlanRequest{Model: req.Model, Cluster: req.Cluster, Training: req.Training, Gpus: 64, TopK: 1,
			SlowGpuSpeed: req.SlowGpuSpeed, DegradedNicSpeed: req.DegradedNicSpeed, DegradedLinkSpeed: req.DegradedLinkSpeed}
		if _, err := c.EstimatePlan(ctx, plan); err == nil {
			t.Errorf("plan, %s %v: answered", tc.field, tc.v)
		} else {
			violationOf(t, err, codes.InvalidArgument, tc.field)
		}
	}
}

// Invalid UTF-8 in a JSON string is bad input (400 naming the field), not a 500.
func TestInvalidUTF8OverREST(t *testing.T) {
	d := secureDaemon(t, nil)
	body := []byte(strings.Replace(okStep, `"llama3-70b"`, "\"llama\xff\xfe-70b\"", 1))
	code, b := restCall(t, d, "/v1/steps:estimate", body)
	if code != http.StatusBadRequest {
		t.Fatalf("%d %.300s", code, b)
	}
	s := decodeStatus(t, b)
	if len(s.Details) == 0 || len(s.Details[0].FieldViolations) == 0 || s.Details[0].FieldViolations[0].Field != "model.name" {
		t.Errorf("%.300s", b)
	}
}

// A gRPC message that does not decode is INVALID_ARGUMENT naming the field where
// the wire format lets it be found, not INTERNAL.
func TestUndecodableGRPCMessage(t *testing.T) {
	d := secureDaemon(t, nil)
	conn := grpcConn(t, d)
	good, err := proto.Marshal(stepRequest())
	if err != nil {
		t.Fatal(err)
	}
	// model (1) { name (1): "llama\xff" }: a string field that is not UTF-8.
	badName := protowire.AppendTag(nil, 1, protowire.BytesType)
	badName = protowire.AppendBytes(badName, protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("llama\xff")))
	// layout (4) { tp (1): a truncated varint }.
	truncated := append(protowire.AppendTag(nil, 4, protowire.BytesType), 2, 8, 0x80)
	for _, tc := range []struct {
		name  string
		body  []byte
		field string
	}{
		{"invalid UTF-8", append(append([]byte(nil), good...), badName...), "model.name"},
		{"truncated", append(append([]byte(nil), good...), truncated...), "layout.tp"},
		{"garbage", []byte{0xff, 0xff, 0xff}, ""},
	} {
		var out pb.EstimateStepResponse
		err := invokeRaw(conn, "EstimateStep", tc.body, &out)
		if tc.field == "" {
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		violationOf(t, err, codes.InvalidArgument, tc.field)
	}
}

// rawMessage is an encoded request sent as it is (rawCodec).
type rawMessage []byte

// rawCodec sends rawMessage bytes and decodes answers as protobuf.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(rawMessage))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

func (rawCodec) Name() string { return "proto" }

// grpcConn is a gRPC connection to d (plain text), closed when the test ends.
func grpcConn(t *testing.T, d daemon) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(d.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// invokeRaw sends body, an encoded request, to the StepcostService method and
// decodes the answer into out.
func invokeRaw(conn *grpc.ClientConn, method string, body []byte, out proto.Message) error {
	return conn.Invoke(context.Background(), "/stepcost.v1.StepcostService/"+method, rawMessage(body), out, grpc.ForceCodecV2(rawCodec{}))
}

// The wire format's pieces, to write requests no generated client would: a field
// (its tag, then value), a varint, and a message of the parts given
// (length-delimited).
func wireField(num protowire.Number, typ protowire.Type, value []byte) []byte {
	return append(protowire.AppendTag(nil, num, typ), value...)
}

func wireVarint(v uint64) []byte { return protowire.AppendVarint(nil, v) }

func wireNested(parts ...[]byte) []byte { return protowire.AppendBytes(nil, bytes.Join(parts, nil)) }

// Long strings a valid request could carry are refused by field, not kept or
// echoed: a 3 MB architecture name came back whole in the answer, and a cluster
// definition's name and description key the pool of built clusters.
func TestLongStringsAreRefused(t *testing.T) {
	s := NewService(DefaultLimits(), nil)
	long := strings.Repeat("n", 3<<20)
	arch := &pb.Architecture{Name: long, Layers: 80, Hidden: 8192, Heads: 64, KvHeads: 8, Ffn: 28672, GatedMlp: true, Vocab: 128256}
	for field, set := range map[string]func(*pb.EstimateStepRequest){
		"model.architecture.name": func(r *pb.EstimateStepRequest) {
			r.Model = &pb.ModelSpec{Source: &pb.ModelSpec_Architecture{Architecture: arch}}
		},
		"cluster.definition.name": func(r *pb.EstimateStepRequest) {
			r.Cluster = definition(&pb.ClusterDefinition{Base: "dgx-h100", Name: long})
		},
		"cluster.definition.description": func(r *pb.EstimateStepRequest) {
			r.Cluster = definition(&pb.ClusterDefinition{Base: "dgx-h100", Description: long})
		},
		"layout.rank_order": func(r *pb.EstimateStepRequest) { r.Layout.RankOrder = long },
	} {
		req := stepRequest()
		set(req)
		resp, err := s.EstimateStep(context.Background(), req)
		if err == nil {
			t.Errorf("%s: answered (%d B)", field, proto.Size(resp))
			continue
		}
		violationOf(t, err, codes.InvalidArgument, field)
		if n := proto.Size(status.Convert(err).Proto()); n > maxErrorAnswer {
			t.Errorf("%s: %d B error", field, n)
		}
	}
}

func definition(d *pb.ClusterDefinition) *pb.ClusterSpec {
	return &pb.ClusterSpec{Source: &pb.ClusterSpec_Definition{Definition: d}}
}

// A gRPC request field this daemon cannot read is refused, naming it, rather than
// left out of the question: a field number it does not know (a client built
// from a newer stepcost.proto) and a known field sent with the wrong wire type
// were both kept as unknown fields and the request answered as if they had not
// been sent (top_k 4 as fixed64: the 3 plans of the varint top_k before it; a
// price as a varint: no price); an int32 field's varint beyond int32 was cut to
// its low 32 bits. The REST gateway refuses unknown JSON fields and integers out
// of their type's range.
func TestUnreadableGRPCFieldsAreRefused(t *testing.T) {
	d := secureDaemon(t, nil)
	conn := grpcConn(t, d)
	good, err := proto.Marshal(planRequest())
	if err != nil {
		t.Fatal(err)
	}
	field, varint, nested := wireField, wireVarint, wireNested
	fixed64 := func(v uint64) []byte { return protowire.AppendFixed64(nil, v) }
	for _, tc := range []struct {
		name  string
		extra []byte
		field string
	}{
		{"unknown field number", field(99, protowire.VarintType, varint(1)), "99"},
		{"unknown field in training", field(3, protowire.BytesType, nested(field(900, protowire.Fixed32Type, []byte{0, 0, 128, 63}))), "training.900"},
		{"unknown field in the constraints", field(7, protowire.BytesType, nested(field(200, protowire.VarintType, varint(8)))), "constraints.200"},
		{"top_k as fixed64", field(11, protowire.Fixed64Type, fixed64(4)), "top_k"},
		{"price as a varint", field(9, protowire.VarintType, varint(3)), "price_per_gpu_hour"},
		{"training.seq_len as bytes", field(3, protowire.BytesType, nested(field(1, protowire.BytesType, nested([]byte("8192"))))), "training.seq_len"},
		{"an excluded node as fixed32", field(16, protowire.Fixed32Type, []byte{1, 0, 0, 0}), "exclude_nodes"},
		// An int32 field's varint beyond int32: protobuf keeps its low 32 bits, so
		// 2³² + 32 GPUs read as 32 (the REST gateway refuses 4294967328).
		{"gpus 2^32 + 32", field(4, protowire.VarintType, varint(1<<32+32)), "gpus"},
		{"training.seq_len 2^40", field(3, protowire.BytesType, nested(field(1, protowire.VarintType, varint(1<<40)))), "training.seq_len"},
		{"an enum beyond int32", field(8, protowire.VarintType, varint(1<<33+1)), "objective"},
		{"a packed constraint beyond int32", field(7, protowire.BytesType, nested(field(1, protowire.BytesType, nested(append(varint(4), varint(1<<35+8)...))))), "constraints.tp[1]"},
		// Elements sent unpacked count too (the first was not counted: tp[0]),
		// also after a packed run.
		{"an unpacked constraint beyond int32", field(7, protowire.BytesType, nested(append(field(1, protowire.VarintType, varint(4)), field(1, protowire.VarintType, varint(1<<35+8))...))), "constraints.tp[1]"},
		{"a packed then an unpacked constraint", field(7, protowire.BytesType, nested(append(field(1, protowire.BytesType, nested(append(varint(4), varint(2)...))), field(1, protowire.VarintType, varint(1<<35+8))...))), "constraints.tp[2]"},
	} {
		var out pb.EstimatePlanResponse
		body := append(append([]byte(nil), good...), tc.extra...)
		err := invokeRaw(conn, "EstimatePlan", body, &out)
		if err == nil {
			t.Errorf("%s: answered (%d plans), the field not read as sent", tc.name, len(out.GetPlans()))
			continue
		}
		t.Run(tc.name, func(t *testing.T) { violationOf(t, err, codes.InvalidArgument, tc.field) })
	}
	// The request without them is answered.
	var out pb.EstimatePlanResponse
	if err := invokeRaw(conn, "EstimatePlan", good, &out); err != nil || len(out.GetPlans()) != 3 {
		t.Fatalf("%v, %d plans", err, len(out.GetPlans()))
	}
}

// The REST gateway reads a body as JSON whatever its Content-Type (curl -d, as
// the README's examples run, sends application/x-www-form-urlencoded); a body
// that is not JSON is a 400 naming the request body, never a default request.
func TestRESTBodyWhateverItsContentType(t *testing.T) {
	d := secureDaemon(t, nil)
	plan := `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 256}, "gpus": 32, "top_k": 1}`
	for _, tc := range []struct {
		contentType, body string
		code              int
	}{
		{"application/json", plan, http.StatusOK},
		{"application/x-www-form-urlencoded", plan, http.StatusOK},
		{"text/plain", plan, http.StatusOK},
		{"", plan, http.StatusOK},
		{"application/x-www-form-urlencoded", "gpus=32&top_k=1", http.StatusBadRequest},
		{"application/xml", "<gpus>32</gpus>", http.StatusBadRequest},
		{"application/json", "null", http.StatusBadRequest},
		{"application/json", "[]", http.StatusBadRequest},
		{"application/json", "", http.StatusBadRequest}, // the empty request: no model
	} {
		code, _, b := restDo(t, d, http.MethodPost, "/v1/plans:estimate", "Content-Type", tc.contentType, strings.NewReader(tc.body))
		if code != tc.code {
			t.Errorf("%q %q: %d, want %d: %.300s", tc.contentType, tc.body, code, tc.code, b)
			continue
		}
		if tc.code == http.StatusBadRequest {
			s := decodeStatus(t, b)
			named := strings.HasPrefix(s.Message, "request body: ")
			for _, d := range s.Details {
				named = named || len(d.FieldViolations) > 0
			}
			if !named {
				t.Errorf("%q %q: the 400 names neither the body nor a field: %s", tc.contentType, tc.body, b)
			}
		}
	}
}

// A gRPC request that gives a field twice, two alternatives of a oneof, or one
// map key twice is refused naming the field, as the REST gateway refuses the
// same JSON: protobuf keeps the last of each, so the request was answered with
// the first silently dropped (top_k 3 then 4 answered 4 plans; a model by name
// and by parameter count answered for the count; bf16 900 then 100 TFLOP/s
// priced at 100).
func TestRepeatedGRPCFieldsAreRefused(t *testing.T) {
	d := secureDaemon(t, nil)
	conn := grpcConn(t, d)
	field, varint, nested := wireField, wireVarint, wireNested
	text := func(s string) []byte { return protowire.AppendString(nil, s) }
	double := func(v float64) []byte { return protowire.AppendFixed64(nil, math.Float64bits(v)) }
	without := func(clear func(*pb.EstimatePlanRequest)) []byte {
		r := planRequest()
		clear(r)
		b, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cat := func(a []byte, b ...byte) []byte { return append(append([]byte(nil), a...), b...) }
	good := without(func(*pb.EstimatePlanRequest) {})
	noModel := without(func(r *pb.EstimatePlanRequest) { r.Model = nil })
	noCluster := without(func(r *pb.EstimatePlanRequest) { r.Cluster = nil })
	tflops := func(v float64) []byte {
		return field(3, protowire.BytesType, nested(field(1, protowire.BytesType, text("bf16")), field(2, protowire.Fixed64Type, double(v))))
	}
	cluster := func(entries ...[]byte) []byte {
		gpu, err := proto.Marshal(&pb.GPU{Name: "H100-SXM", Arch: "hopper", MemoryGb: 85.9, MemoryBandwidthGbps: 3350, NvlinkGbps: 450, Sms: 132})
		if err != nil {
			t.Fatal(err)
		}
		return field(2, protowire.BytesType, nested(field(2, protowire.BytesType, nested(
			field(2, protowire.BytesType, text("dgx-h100")),
			field(3, protowire.BytesType, nested(append(gpu, bytes.Join(entries, nil)...)))))))
	}
	for _, tc := range []struct {
		name  string
		body  []byte
		field string
	}{
		{"top_k twice", cat(good, field(11, protowire.VarintType, varint(4))...), "top_k"},
		{"gpus twice", cat(good, field(4, protowire.VarintType, varint(64))...), "gpus"},
		{"training twice", cat(good, field(3, protowire.BytesType, nested(field(1, protowire.VarintType, varint(4096))))...), "training"},
		{"model by name and by params", cat(noModel, field(1, protowire.BytesType, nested(
			field(1, protowire.BytesType, text("llama3-8b")), field(3, protowire.Fixed64Type, double(70e9))))...), "model.params"},
		{"model name twice", cat(noModel, field(1, protowire.BytesType, nested(
			field(1, protowire.BytesType, text("llama3-8b")), field(1, protowire.BytesType, text("llama3-70b"))))...), "model.name"},
		{"a map key twice", cat(noCluster, cluster(tflops(900), tflops(100))...), "cluster.definition.gpu.peak_tflops.bf16"},
	} {
		var out pb.EstimatePlanResponse
		err := invokeRaw(conn, "EstimatePlan", tc.body, &out)
		if err == nil {
			t.Errorf("%s: answered (%d plans), the first value dropped", tc.name, len(out.GetPlans()))
			continue
		}
		t.Run(tc.name, func(t *testing.T) { violationOf(t, err, codes.InvalidArgument, tc.field) })
	}
	// The same requests with each field once are answered; a repeated field
	// given in several runs (packed and not) is one list.
	for name, body := range map[string][]byte{
		"good":              good,
		"one map key":       cat(noCluster, cluster(tflops(900))...),
		"constraints.tp x2": cat(good, field(7, protowire.BytesType, nested(field(1, protowire.VarintType, varint(4)), field(1, protowire.VarintType, varint(8))))...),
	} {
		var out pb.EstimatePlanResponse
		if err := invokeRaw(conn, "EstimatePlan", body, &out); err != nil || len(out.GetPlans()) == 0 {
			t.Errorf("%s: %v, %d plans", name, err, len(out.GetPlans()))
		}
	}
}

// The API reads its request from the body alone: a query parameter on an API
// route is refused naming it, where it was dropped without a word
// (/v1/steps:estimate?layout.tp=2 answered tp 8 from the body;
// /v1/catalog?model=x the whole catalog). A body with a Content-Encoding is
// refused naming the header (415, Accept-Encoding: identity): a gzipped body was
// read as JSON and refused as "malformed JSON … invalid value \x1f", and a body
// declared br but sent plain was answered.
func TestRESTQueryAndEncodingAreRefused(t *testing.T) {
	d := secureDaemon(t, nil)
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte(okStep))
	w.Close()
	for _, tc := range []struct {
		method, path, encoding string
		body                   []byte
		code                   int
		field                  string
	}{
		{"POST", "/v1/steps:estimate?layout.tp=2", "", []byte(okStep), http.StatusBadRequest, "layout.tp"},
		{"POST", "/v1/plans:estimate?gpus=64&top_k=1", "", []byte(okPlan), http.StatusBadRequest, "gpus"},
		{"POST", "/v1/collectives:simulate?nodes=8", "", []byte(okColl), http.StatusBadRequest, "nodes"},
		{"POST", "/v1/configs:rank?x", "", []byte(`{"configs": [` + okStep + `]}`), http.StatusBadRequest, "x"},
		{"POST", "/v1/clusters:calibrate?base=dgx-a100", "", []byte(`{}`), http.StatusBadRequest, "base"},
		{"POST", "/v1/pictures:schedule?estimate.layout.tp=2", "", []byte(okStep), http.StatusBadRequest, "estimate.layout.tp"},
		{"POST", "/v1/pictures:pareto?plan.gpus=8", "", []byte(okPlan), http.StatusBadRequest, "plan.gpus"},
		{"POST", "/v1/pictures:calibration?calibration.base=x", "", []byte(`{}`), http.StatusBadRequest, "calibration.base"},
		{"GET", "/v1/catalog?model=llama3-8b", "", nil, http.StatusBadRequest, "model"},
		{"POST", "/v1/steps:estimate?%zz", "", []byte(okStep), http.StatusBadRequest, "?%zz"},
		{"POST", "/v1/steps:estimate", "gzip", gz.Bytes(), http.StatusUnsupportedMediaType, "Content-Encoding"},
		{"POST", "/v1/steps:estimate", "br", []byte(okStep), http.StatusUnsupportedMediaType, "Content-Encoding"},
		// Without either, and with the identity coding, the same calls are answered.
		{"POST", "/v1/steps:estimate", "identity", []byte(okStep), http.StatusOK, ""},
		{"POST", "/v1/steps:estimate?", "", []byte(okStep), http.StatusOK, ""},
		{"GET", "/v1/catalog", "", nil, http.StatusOK, ""},
		{"GET", "/healthz?service=", "", nil, http.StatusOK, ""},
	} {
		code, header, b := restDo(t, d, tc.method, tc.path, "Content-Encoding", tc.encoding, bytes.NewReader(tc.body))
		if code != tc.code {
			t.Errorf("%s %s (%s): %d, want %d: %.300s", tc.method, tc.path, tc.encoding, code, tc.code, b)
			continue
		}
		if tc.field == "" {
			continue
		}
		s := decodeStatus(t, b)
		if s.Code != int(codes.InvalidArgument) || len(s.Details) == 0 || len(s.Details[0].FieldViolations) == 0 || s.Details[0].FieldViolations[0].Field != tc.field {
			t.Errorf("%s %s (%s): want INVALID_ARGUMENT naming %s: %.300s", tc.method, tc.path, tc.encoding, tc.field, b)
		}
		if tc.code == http.StatusUnsupportedMediaType && header.Get("Accept-Encoding") != "identity" {
			t.Errorf("%s (%s): Accept-Encoding %q", tc.path, tc.encoding, header.Get("Accept-Encoding"))
		}
	}
}

// A body behind a UTF-8 byte-order mark is read as without it, on every route
// (RFC 8259 section 8.1 lets a parser ignore the mark, and the command line's
// files are read so): the same status and the same bytes, an error's column
// included. It was refused as "malformed JSON at line 1, column 1: invalid value"
// followed by the invisible mark. A body in UTF-16 or UTF-32 (RFC 8259 requires
// UTF-8) is refused saying so, naming the mark it starts with.
var cachedTrue = regexp.MustCompile(`"cached":\s*true`)

func TestRESTBodyWithByteOrderMark(t *testing.T) {
	d := secureDaemon(t, nil)
	const bom = "\uFEFF"
	for _, tc := range []struct{ path, body string }{
		{"/v1/steps:estimate", okStep},
		{"/v1/plans:estimate", okPlan},
		{"/v1/collectives:simulate", okColl},
		{"/v1/configs:rank", `{"configs": [` + okStep + `]}`},
		{"/v1/clusters:calibrate", `{}`},
		{"/v1/pictures:schedule", okStep},
		{"/v1/pictures:pareto", okPlan},
		{"/v1/pictures:calibration", `{}`},
		{"/v1/steps:estimate", ""},
		{"/v1/steps:estimate", "\n" + okStep},
		{"/v1/collectives:simulate", `{"nodes": x}`},
		{"/v1/collectives:simulate", `{"nodes": 2, "nodes": 3}`},
	} {
		plainCode, b := restCall(t, d, tc.path, []byte(tc.body))
		code, marked := restCall(t, d, tc.path, []byte(bom+tc.body))
		// The second of two same requests is answered from the cache, and says so.
		marked = cachedTrue.ReplaceAll(marked, []byte(`"cached":false`))
		b = cachedTrue.ReplaceAll(b, []byte(`"cached":false`))
		if code != plainCode || !bytes.Equal(marked, b) {
			t.Errorf("%s %.40q: with a byte-order mark %d %.300s, without %d %.300s", tc.path, tc.body, code, marked, plainCode, b)
		}
	}
	for _, tc := range []struct{ name, mark string }{{"UTF-16LE", "\xff\xfe"}, {"UTF-16BE", "\xfe\xff"}, {"UTF-32LE", "\xff\xfe\x00\x00"}, {"UTF-32BE", "\x00\x00\xfe\xff"}} {
		code, b := restCall(t, d, "/v1/collectives:simulate", []byte(tc.mark+"{\x00}\x00"))
		s := decodeStatus(t, b)
		if code != http.StatusBadRequest || !strings.Contains(s.Message, tc.name) || !strings.Contains(s.Message, "UTF-8") {
			t.Errorf("%s: %d %s, want a 400 naming %s and asking for UTF-8", tc.name, code, b, tc.name)
		}
	}
}

// Reading a request's encoding for the fields protobuf would not keep as sent
// costs no allocation per element of a list: a 4 MB body listing 1.9 million
// layer_split entries took 1.3 s in readFault, which formatted each element's
// path ("layout.layer_split[1234567]") whether or not it was at fault.
func TestReadFaultOfLongListAllocatesLittle(t *testing.T) {
	split := make([]int32, 100_000)
	for i := range split {
		split[i] = 1
	}
	b, err := proto.Marshal(&pb.EstimateStepRequest{Layout: &pb.Layout{LayerSplit: split}, Training: &pb.Training{SeqLen: 8192}})
	if err != nil {
		t.Fatal(err)
	}
	md := (&pb.EstimateStepRequest{}).ProtoReflect().Descriptor()
	if f, r := readFault(b, md, ""); r != "" {
		t.Fatalf("%s: %s", f, r)
	}
	if n := testing.AllocsPerRun(5, func() { readFault(b, md, "") }); n > 10 {
		t.Errorf("%.0f allocations to read a list of %d", n, len(split))
	}
}
