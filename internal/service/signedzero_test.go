package service

import (
	"context"
	"math"
	"slices"
	"sort"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/stepcost/stepcost/cache"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// A float sent as -0 is the number 0: a request with -0 in any float field is the
// request with 0 there — one cache entry, one answer, and when refused the same
// error (a refusal quoting "-0" where the other quotes "0" is two answers to one
// question). Every float and double field of every cached request (found by
// reflection, as TestCacheKeyCoversEveryField finds them: scalars, lists' first
// elements and map values) is set to 0 and to -0 in turn in each base request.
func TestSignedZeroIsZeroInEveryFloatField(t *testing.T) {
	s := New(Options{})
	negZero := math.Copysign(0, -1)
	tried := map[string]bool{} // method.path → some base had the field
	for _, b := range keyBases(t) {
		for _, f := range floatFields(b.req.ProtoReflect().Descriptor(), nil) {
			id := b.method + "." + f.path
			tried[id] = true
			pos, neg := f.set(b.req, 0), f.set(b.req, negZero)
			kPos, errPos := keyOf(s, b.method, pos)
			kNeg, errNeg := keyOf(s, b.method, neg)
			switch {
			case (errPos == nil) != (errNeg == nil):
				t.Errorf("%s %s: with 0 err=%v, with -0 err=%v", id, b.name, errPos, errNeg)
			case errPos != nil && errPos.Error() != errNeg.Error():
				t.Errorf("%s %s: refused differently:\n  0: %v\n -0: %v", id, b.name, errPos, errNeg)
			case errPos == nil && kPos != kNeg:
				t.Errorf("%s %s: -0 and 0 have different cache keys", id, b.name)
			}
		}
	}
	ids := make([]string, 0, len(tried))
	for id := range tried {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, want := range []string{"EstimateStep.slow_gpu_speed", "EstimatePlan.price_per_gpu_hour", "EstimatePlan.placement_tolerance",
		"EstimatePlan.degraded_nodes.gpu_speed", "EstimateStep.training.moe_imbalance"} {
		if !slices.Contains(ids, want) {
			t.Errorf("%s: not among the float fields tried (%d tried)", want, len(ids))
		}
	}
	t.Logf("%d float fields tried", len(ids))
}

// floatField is one float or double field (path) of a request: set returns a copy
// of the request with the field (a list's first element, every value of a map)
// set to v.
type floatField struct {
	path string
	set  func(req proto.Message, v float64) proto.Message
}

// floatFields lists the float and double fields under md, reached through via.
func floatFields(md protoreflect.MessageDescriptor, via []protoreflect.FieldDescriptor) []floatField {
	var out []floatField
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		chain := append(slices.Clip(via), fd)
		if fd.Message() != nil && !fd.IsMap() {
			if len(via) > 8 || slices.ContainsFunc(via, func(f protoreflect.FieldDescriptor) bool { return f.Message() == fd.Message() }) {
				continue
			}
			out = append(out, floatFields(fd.Message(), chain)...)
			continue
		}
		vd := fd
		if fd.IsMap() {
			vd = fd.MapValue()
		}
		if k := vd.Kind(); k != protoreflect.DoubleKind && k != protoreflect.FloatKind {
			continue
		}
		value := func(v float64) protoreflect.Value {
			if vd.Kind() == protoreflect.FloatKind {
				return protoreflect.ValueOfFloat32(float32(v))
			}
			return protoreflect.ValueOfFloat64(v)
		}
		out = append(out, floatField{path: pathOf(chain), set: func(req proto.Message, v float64) proto.Message {
			c := proto.Clone(req)
			m := reach(c.ProtoReflect(), via)
			switch {
			case fd.IsMap():
				mp := m.Mutable(fd).Map()
				if mp.Len() == 0 {
					mp.Set(protoreflect.ValueOfString("bf16").MapKey(), value(v))
				}
				mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool { mp.Set(k, value(v)); return true })
			case fd.IsList():
				l := m.Mutable(fd).List()
				if l.Len() == 0 {
					l.Append(value(v))
				}
				l.Set(0, value(v))
			default:
				m.Set(fd, value(v))
			}
			return c
		}})
	}
	return out
}

// The case as a caller meets it: EstimateStep with slow_gpu_speed 0 and then -0
// (no slow GPU either way) is one cache entry — the second is served from the
// first's — and the caller's request is not changed.
func TestSlowGPUSpeedNegativeZeroSharesTheEntry(t *testing.T) {
	c, err := cache.New(cache.Config{MaxCost: 64 << 20}, func(m proto.Message) int64 { return int64(proto.Size(m)) + 64 })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := New(Options{Cache: c})
	req := func(slow float64) *pb.EstimateStepRequest {
		return &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
			Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
			Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64},
			Layout:   &pb.Layout{Tp: 8, Dp: 2, MicroBatch: 1}, SlowGpuSpeed: slow}
	}
	first, err := s.EstimateStep(context.Background(), req(0))
	if err != nil {
		t.Fatal(err)
	}
	for range 200 { // the cache stores asynchronously: until 0's answer is stored
		again, err := s.EstimateStep(context.Background(), req(0))
		if err != nil {
			t.Fatal(err)
		}
		if again.GetCached() {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	neg := req(math.Copysign(0, -1))
	second, err := s.EstimateStep(context.Background(), neg)
	if err != nil {
		t.Fatal(err)
	}
	if !second.GetCached() {
		t.Error("slow_gpu_speed -0 is not served from the entry of slow_gpu_speed 0")
	}
	if a, b := first.GetEstimate().GetStepTimeS(), second.GetEstimate().GetStepTimeS(); a != b {
		t.Errorf("step time with 0: %v s, with -0: %v s", a, b)
	}
	if !math.Signbit(neg.GetSlowGpuSpeed()) {
		t.Error("the caller's request was changed")
	}
}
