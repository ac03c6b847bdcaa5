package server

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/internal/fieldpath"
	"github.com/stepcost/stepcost/internal/service"
	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// The fuzz targets feed requests through the Service methods — JSON bodies decoded
// as strictly as the REST gateway decodes them, or binary protobuf as gRPC clients
// send it (see decodeInput) — and so through validation, the estimator or the
// planner, and the conversion back. An input must end in a well-formed answer or
// in an error that names the field at fault; never a panic, a hang, an Internal
// error or a number that cannot be right (NaN, ±Inf, a negative time or size).
//
// Seeds are in testdata/fuzz/<target>/; run one target longer with e.g.
//
//	go test -run '^$' -fuzz '^FuzzEstimatePlan$' -fuzztime 5m ./server/

// fuzzLimits keep one input fast: small enough clusters that a first placement of
// their communication groups is quick, and searches a few hundred milliseconds long.
var fuzzLimits = Limits{MaxGPUs: 4096, MaxRankConfigs: 8, MaxCandidates: 100_000}

const (
	// fuzzDeadline is each call's deadline: past it a search must stop.
	fuzzDeadline = 2 * time.Second
	// fuzzHang is how long a call may take before it counts as a hang: well past the
	// deadline, for an estimate that does not look at its context, on a busy machine.
	fuzzHang = 20 * time.Second
)

// fuzzService is shared by every input of a fuzzing process (as a daemon's is by its
// requests), without a response cache so that every input is computed.
var fuzzService = sync.OnceValue(func() *Service { return NewService(fuzzLimits, nil) })

// fuzzRPC decodes data into a new request and calls the service with it.
func fuzzRPC[Req proto.Message](t *testing.T, data []byte, newReq func() Req, call func(context.Context, *Service, Req) (proto.Message, error)) {
	req, ok := decodeInput(data, newReq)
	if !ok {
		return
	}
	once := func() (proto.Message, error) {
		ctx, cancel := context.WithTimeout(context.Background(), fuzzDeadline)
		defer cancel()
		start := time.Now()
		resp, err := call(ctx, fuzzService(), req)
		if took := time.Since(start); took > fuzzHang {
			t.Fatalf("took %v (deadline %v)", took, fuzzDeadline)
		}
		return resp, err
	}
	resp, err := once()
	if err != nil {
		checkStatus(t, req.ProtoReflect().Descriptor(), err)
	} else {
		checkAnswer(t, resp)
	}
	// The same request again is answered with the same bytes, or refused the same
	// way (docs/service.md: "The answers are deterministic", and cached as such),
	// unless one of the two ran out of time.
	again, errAgain := once()
	if status.Code(err) == codes.DeadlineExceeded || status.Code(errAgain) == codes.DeadlineExceeded {
		return
	}
	if (err == nil) != (errAgain == nil) || err != nil && !proto.Equal(status.Convert(err).Proto(), status.Convert(errAgain).Proto()) {
		t.Fatalf("asked twice: %v, then %v", err, errAgain)
	}
	if err == nil {
		first, err1 := wire.MarshalJSON(withoutElapsed(resp))
		second, err2 := wire.MarshalJSON(withoutElapsed(again))
		if err1 != nil || err2 != nil || !bytes.Equal(first, second) {
			t.Fatalf("asked twice, answered\n%s (%v)\nthen\n%s (%v)", first, err1, second, err2)
		}
	}
}

// withoutElapsed is m without the one number of an answer that is not the
// request's: how long a search took (SearchStats.elapsed_ms).
func withoutElapsed(m proto.Message) proto.Message {
	if r, ok := m.(*pb.EstimatePlanResponse); ok && r.GetStats() != nil {
		r = proto.Clone(r).(*pb.EstimatePlanResponse)
		r.Stats.ElapsedMs = 0
		return r
	}
	return m
}

// decodeInput reads a fuzz input as a request: JSON as the REST gateway reads it,
// or else binary protobuf as a gRPC client sends it. Mutated JSON is mostly not
// JSON any more (the gateway answers that itself: see FuzzRESTDecode), while
// mutated protobuf mostly still decodes, with other numbers in its fields — what
// validation is there for — so the targets are seeded with both forms.
func decodeInput[Req proto.Message](data []byte, newReq func() Req) (Req, bool) {
	req := newReq()
	if protojson.Unmarshal(data, req) == nil {
		return req, true
	}
	req = newReq()
	return req, proto.Unmarshal(data, req) == nil
}

// addBinarySeeds adds the binary protobuf form of every JSON seed in
// testdata/fuzz/<target>/.
func addBinarySeeds[Req proto.Message](f *testing.F, newReq func() Req) {
	addSeedsOf(f, f.Name(), newReq)
}

// addSeedsOf adds the JSON seeds of target (testdata/fuzz/<target>/) and their
// binary protobuf form.
func addSeedsOf[Req proto.Message](f *testing.F, target string, newReq func() Req) {
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[1], "[]byte(") {
			continue
		}
		text, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		req := newReq()
		if err != nil || protojson.Unmarshal([]byte(text), req) != nil {
			continue
		}
		if bin, err := (proto.MarshalOptions{Deterministic: true}).Marshal(req); err == nil && len(bin) > 0 {
			f.Add(bin)
		}
	}
}

// checkStatus asserts err is a status with an expected code and, unless it is a
// deadline, names the fields of request md at fault.
func checkStatus(t *testing.T, md protoreflect.MessageDescriptor, err error) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok {
		t.Fatalf("not a status: %T %v", err, err)
	}
	var vs []*errdetails.BadRequest_FieldViolation
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			vs = append(vs, br.GetFieldViolations()...)
		}
	}
	checkCode(t, func(field string) bool { return fieldpath.Exists(md, field) }, st.Code().String(), st.Message(), len(vs), func(i int) (string, string) {
		return vs[i].GetField(), vs[i].GetDescription()
	})
}

// checkCode is checkStatus on a code, a message and the violations; names says
// whether a violation's field is one of the request's.
func checkCode(t *testing.T, names func(field string) bool, code, msg string, n int, violation func(int) (field, rule string)) {
	t.Helper()
	switch code {
	case codes.DeadlineExceeded.String(), "DEADLINE_EXCEEDED":
		return
	case codes.InvalidArgument.String(), codes.NotFound.String(), codes.ResourceExhausted.String(),
		"INVALID_ARGUMENT", "NOT_FOUND", "RESOURCE_EXHAUSTED":
	default:
		t.Fatalf("unexpected code %s: %s", code, msg)
	}
	if n == 0 {
		t.Fatalf("%s names no field: %s", code, msg)
	}
	for i := range n {
		field, rule := violation(i)
		if !names(field) || strings.TrimSpace(rule) == "" {
			t.Fatalf("%s: violation %q %q does not name a field and a rule (message %s)", code, field, rule, msg)
		}
	}
}

// itemRequest is the message a batch item's (and a model's) field paths start from.
var itemRequest = (&pb.EstimateStepRequest{}).ProtoReflect().Descriptor()

// itemField says whether a RankConfigs item's error names a field: one of its
// config's (an EstimateStepRequest's path), or one the batch sets for every config
// and this config is at fault against (docs/service.md: a token_budget below the
// config's step is refused in its item).
func itemField(field string) bool {
	return fieldpath.Exists(itemRequest, field) || fieldpath.Exists(rankRequest, field)
}

var rankRequest = (&pb.RankConfigsRequest{}).ProtoReflect().Descriptor()

// mayBeNegative lists the numbers of an answer that can rightly be below zero.
var mayBeNegative = map[protoreflect.FullName]string{
	// A score is minimised: the throughput objective scores minus tokens/s per GPU.
	"stepcost.v1.Plan.score":         "score",
	"stepcost.v1.RankedConfig.score": "score",
	// A layout that does not fit has negative headroom (fits is false).
	"stepcost.v1.Memory.headroom_gb": "headroom",
	// The executed schedule may be faster than the closed form (100 × (time ÷
	// closed form − 1) is then below zero, by as little as a rounding error).
	"stepcost.v1.CollectiveSchedule.difference_pct": "difference",
}

// mayBeMinusOne lists the numbers of an answer for which -1 is a value, not an error:
// a rank of a switch transfer (NVLS multimem: every rank of the group, RankPair).
var mayBeMinusOne = map[protoreflect.FullName]bool{
	"stepcost.v1.RankPair.src": true,
	"stepcost.v1.RankPair.dst": true,
}

// checkAnswer walks every number of a response and checks what the estimates
// promise of themselves.
func checkAnswer(t *testing.T, m proto.Message) {
	t.Helper()
	if err := checkNumbers(m.ProtoReflect(), string(m.ProtoReflect().Descriptor().Name())); err != nil {
		t.Fatal(err)
	}
	var estimates []*pb.StepEstimate
	var collectives []*pb.CollectiveEstimate
	switch r := m.(type) {
	case *pb.EstimateStepResponse:
		estimates = append(estimates, r.GetEstimate())
	case *pb.EstimatePlanResponse:
		for i, p := range r.GetPlans() {
			if p.GetRank() != int32(i+1) || p.GetGpus() != p.GetEstimate().GetGpus() {
				t.Fatalf("plan %d: rank %d, %d GPUs, estimate on %d", i, p.GetRank(), p.GetGpus(), p.GetEstimate().GetGpus())
			}
			estimates = append(estimates, p.GetEstimate())
		}
		for _, p := range r.GetPareto() {
			estimates = append(estimates, p.GetEstimate())
		}
	case *pb.RankConfigsResponse:
		for i, c := range r.GetResults() {
			if c.GetIndex() != int32(i) {
				t.Fatalf("result %d has index %d", i, c.GetIndex())
			}
			if e := c.GetError(); e != nil {
				if c.GetEstimate() != nil || c.GetRank() != 0 {
					t.Fatalf("result %d failed but has an estimate or a rank", i)
				}
				checkCode(t, itemField, e.GetCode(), e.GetMessage(), len(e.GetViolations()), func(j int) (string, string) {
					return e.GetViolations()[j].GetField(), e.GetViolations()[j].GetDescription()
				})
				continue
			}
			if c.GetRank() < 1 {
				t.Fatalf("result %d: estimated but rank %d", i, c.GetRank())
			}
			estimates = append(estimates, c.GetEstimate())
		}
	case *pb.SimulateCollectiveResponse:
		collectives = append(collectives, r.GetChosen())
		collectives = append(collectives, r.GetConsidered()...)
		if r.GetRanks() < 1 {
			t.Fatalf("collective over %d ranks", r.GetRanks())
		}
	}
	for _, e := range estimates {
		if err := checkEstimate(e); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range collectives {
		if !(c.GetTimeUs() > 0) {
			t.Fatalf("collective %v takes %v µs", c.GetAlgorithm(), c.GetTimeUs())
		}
	}
}

// xmlWellFormed reads doc to its end as XML.
func xmlWellFormed(doc []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(doc))
	for {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// checkEstimate checks that a step estimate is a step: it takes time, its parts add
// up, it processes tokens and it needs memory.
func checkEstimate(e *pb.StepEstimate) error {
	switch {
	case e == nil:
		return fmt.Errorf("missing estimate")
	case !(e.GetStepTimeS() > 0):
		return fmt.Errorf("step time %v", e.GetStepTimeS())
	case math.Abs(e.GetBreakdown().GetTotalS()-e.GetStepTimeS()) > 1e-9*e.GetStepTimeS():
		return fmt.Errorf("breakdown total %v ≠ step time %v", e.GetBreakdown().GetTotalS(), e.GetStepTimeS())
	case !(e.GetThroughput().GetTokensPerS() > 0) || !(e.GetThroughput().GetMfu() > 0):
		return fmt.Errorf("throughput %v", e.GetThroughput())
	case e.GetGpus() < 1 || e.GetMicroBatches() < 1 || e.GetStageLayers() < 1:
		return fmt.Errorf("%d GPUs, %d micro-batches, %d layers per stage", e.GetGpus(), e.GetMicroBatches(), e.GetStageLayers())
	case !(e.GetMemory().GetTotalGb() > 0) || !(e.GetMemory().GetCapacityGb() > 0):
		return fmt.Errorf("memory %v", e.GetMemory())
	}
	return nil
}

// checkNumbers reports the first NaN, infinity or (outside mayBeNegative) negative
// number in m.
func checkNumbers(m protoreflect.Message, path string) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		p := path + "." + string(fd.Name())
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len() && err == nil; i++ {
				err = checkValue(fd, l.Get(i), fmt.Sprintf("%s[%d]", p, i))
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				err = checkValue(fd.MapValue(), v, fmt.Sprintf("%s[%v]", p, k))
				return err == nil
			})
		default:
			err = checkValue(fd, v, p)
		}
		return err == nil
	})
	return err
}

func checkValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string) error {
	neg := func() bool { _, ok := mayBeNegative[fd.FullName()]; return ok }
	switch fd.Kind() {
	case protoreflect.MessageKind:
		return checkNumbers(v.Message(), path)
	case protoreflect.DoubleKind, protoreflect.FloatKind:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 && !neg() {
			return fmt.Errorf("%s = %v", path, f)
		}
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Sint32Kind, protoreflect.Sint64Kind,
		protoreflect.Sfixed32Kind, protoreflect.Sfixed64Kind:
		if v.Int() < 0 && !neg() && !(v.Int() == -1 && mayBeMinusOne[fd.FullName()]) {
			return fmt.Errorf("%s = %d", path, v.Int())
		}
	}
	return nil
}

func FuzzEstimateStep(f *testing.F) {
	newReq := func() *pb.EstimateStepRequest { return &pb.EstimateStepRequest{} }
	addBinarySeeds(f, newReq)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRPC(t, data, newReq,
			func(ctx context.Context, s *Service, r *pb.EstimateStepRequest) (proto.Message, error) {
				return s.EstimateStep(ctx, r)
			})
	})
}

// FuzzDrawSchedule draws what FuzzEstimateStep estimates (from its seeds): the
// picture of every request answered is an SVG document, and a request refused is
// refused as EstimateStep refuses it, by field.
func FuzzDrawSchedule(f *testing.F) {
	newReq := func() *pb.EstimateStepRequest { return &pb.EstimateStepRequest{} }
	addSeedsOf(f, "FuzzEstimateStep", newReq)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRPC(t, data, newReq,
			func(ctx context.Context, s *Service, r *pb.EstimateStepRequest) (proto.Message, error) {
				body, err := s.DrawSchedule(ctx, &pb.DrawScheduleRequest{Estimate: r})
				if err == nil {
					if body.GetContentType() != "image/svg+xml" || !bytes.HasPrefix(body.GetData(), []byte("<svg")) {
						t.Fatalf("not an SVG: %s %.40q", body.GetContentType(), body.GetData())
					}
					if err := xmlWellFormed(body.GetData()); err != nil {
						t.Fatalf("SVG not well-formed: %v", err)
					}
				}
				return body, err
			})
	})
}

func FuzzEstimatePlan(f *testing.F) {
	newReq := func() *pb.EstimatePlanRequest { return &pb.EstimatePlanRequest{} }
	addBinarySeeds(f, newReq)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRPC(t, data, newReq,
			func(ctx context.Context, s *Service, r *pb.EstimatePlanRequest) (proto.Message, error) {
				resp, err := s.EstimatePlan(ctx, r)
				if err == nil && int32(len(resp.GetPlans())) > max(r.GetTopK(), 0) && r.GetTopK() != 0 {
					t.Fatalf("%d plans for top_k %d", len(resp.GetPlans()), r.GetTopK())
				}
				return resp, err
			})
	})
}

func FuzzRankConfigs(f *testing.F) {
	newReq := func() *pb.RankConfigsRequest { return &pb.RankConfigsRequest{} }
	addBinarySeeds(f, newReq)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRPC(t, data, newReq,
			func(ctx context.Context, s *Service, r *pb.RankConfigsRequest) (proto.Message, error) {
				resp, err := s.RankConfigs(ctx, r)
				if err == nil && len(resp.GetResults()) != len(r.GetConfigs()) {
					t.Fatalf("%d results for %d configs", len(resp.GetResults()), len(r.GetConfigs()))
				}
				return resp, err
			})
	})
}

func FuzzSimulateCollective(f *testing.F) {
	newReq := func() *pb.SimulateCollectiveRequest { return &pb.SimulateCollectiveRequest{} }
	addBinarySeeds(f, newReq)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRPC(t, data, newReq,
			func(ctx context.Context, s *Service, r *pb.SimulateCollectiveRequest) (proto.Message, error) {
				return s.SimulateCollective(ctx, r)
			})
	})
}

// FuzzResolveModel covers a model given by catalog name, by architecture or by
// parameter count: the accepted ones must validate and have a finite, positive size
// and amount of work; a parameter count must land near the count asked for.
func FuzzResolveModel(f *testing.F) {
	newSpec := func() *pb.ModelSpec { return &pb.ModelSpec{} }
	addBinarySeeds(f, newSpec)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, ok := decodeInput(data, newSpec)
		if !ok {
			return
		}
		a, derived, err := wire.ResolveModel("model", m)
		if err != nil {
			checkStatus(t, itemRequest, toStatus(context.Background(), err))
			if _, f := service.CodeOf(err); len(f) > 0 && !strings.HasPrefix(f[0].Field, "model") {
				t.Fatalf("violation of %q, not under model", f[0].Field)
			}
			var nf *wire.NotFoundError
			if errors.As(err, &nf) && nf.Field != "model.name" {
				t.Fatalf("not found: %v", err)
			}
			return
		}
		if err := a.Validate(); err != nil {
			t.Fatalf("accepted %+v does not validate: %v", a, err)
		}
		p := a.Params()
		for _, v := range []float64{p.Total, p.Active, a.ForwardFLOPs(1), a.ForwardFLOPs(step.MaxSeqLen)} {
			if !(v > 0) || math.IsInf(v, 0) {
				t.Fatalf("%+v: params %+v, forward FLOPs %v", a, p, v)
			}
		}
		if want := m.GetParams(); m.GetSource() != nil && derived != "" && math.Abs(p.Total/want-1) > 0.1 {
			t.Fatalf("derived %v parameters for %v: %s", p.Total, want, derived)
		}
		if back := wire.ArchToProto(a); !proto.Equal(back, wire.ArchToProto(wire.ArchFromProto(back).Normalise())) {
			t.Fatalf("architecture does not survive a round trip: %v", back)
		}
	})
}

// The fuzz targets' check of field paths knows the request's fields.
func TestFieldExists(t *testing.T) {
	plan := (&pb.EstimatePlanRequest{}).ProtoReflect().Descriptor()
	for path, want := range map[string]bool{
		"training.seq_len": true, "cluster.free_gpus[2].gpus[0]": true, "cluster.free_gpus[0].node": true,
		"cluster.definition.gpu.peak_tflops.bf16": true, "cluster.definition.gpu.peak_tflops": true, "constraints.tp[1]": true,
		"gpus": true, "model.architecture.moe.top_k": true,
		"size": false, "cluster.nics.kind": false, "training.seq_len.x": false, "gpus[0]": false, "cluster.free_gpus.node": false,
		"constraints.tp[x]": false, "": false, "model.architecture.moe.top_k.x": false,
	} {
		if got := fieldpath.Exists(plan, path); got != want {
			t.Errorf("%q: %v, want %v", path, got, want)
		}
	}
}
