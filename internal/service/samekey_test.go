package service

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/cache"
	"github.com/stepcost/stepcost/internal/buildinfo"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// answerOf is the cache key of a request of s and its answer computed without
// the cache, encoded deterministically without what describes the call
// (stats.elapsed_ms, cached); ok is false when the request does not resolve or
// its computation fails.
func answerOf(t *testing.T, s *Service, method string, req proto.Message) (key string, answer []byte, ok bool) {
	var w work
	var err error
	switch r := req.(type) {
	case *pb.EstimateStepRequest:
		w, err = s.estimateStep(r)
	case *pb.EstimatePlanRequest:
		w, err = s.estimatePlan(r)
	case *pb.SimulateCollectiveRequest:
		w, err = s.simulateCollective(r)
	}
	if err != nil {
		return "", nil, false
	}
	rest, resolved, err := w.key.parts()
	if err != nil {
		return "", nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := w.run(ctx)
	if err != nil {
		return "", nil, false
	}
	if p, isPlan := m.(*pb.EstimatePlanResponse); isPlan {
		p.Cached = false
		if p.Stats != nil {
			p.Stats.ElapsedMs = 0
		}
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return cache.Key([]byte(method), []byte(buildinfo.EstimatorVersion), rest, resolved), b, true
}

// The other half of TestCacheKeyCoversEveryField: requests that share a cache key
// share their answer. Every field of every cached request is changed in turn, to
// each of its candidate values, from the same base requests; each change that
// resolves is computed without the cache, and two requests with one key and
// different answers would have one answered with the other's from the cache. (A
// field whose change leaves the key alone must leave the answer alone: the
// normalisation of equivalent spellings — a model by name or architecture,
// constraints in any order, defaults spelled out — is checked here against the
// answers themselves.)
func TestSameKeySameAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("computes some 17 000 requests (20 s of CPU)")
	}
	s := New(Options{})
	type seen struct {
		path   string
		answer []byte
	}
	requests, keys := 0, map[string]bool{}
	for _, b := range keyBases(t) {
		byKey := map[string]seen{}
		check := func(path string, req proto.Message) {
			k, a, ok := answerOf(t, s, b.method, req)
			if !ok {
				return
			}
			requests++
			keys[k] = true
			if prev, dup := byKey[k]; dup && !proto.Equal(unmarshalAnswer(t, b.method, prev.answer), unmarshalAnswer(t, b.method, a)) {
				t.Errorf("%s %s: %s and %s share a cache key and have different answers", b.method, b.name, prev.path, path)
				if testing.Verbose() {
					t.Logf("first: %v\nthen:  %v\nrequest: %v", unmarshalAnswer(t, b.method, prev.answer), unmarshalAnswer(t, b.method, a), req)
				}
				return
			}
			if _, dup := byKey[k]; !dup {
				byKey[k] = seen{path, a}
			}
		}
		check("(the base request)", b.req)
		for _, m := range mutations(b.req.ProtoReflect().Descriptor(), nil) {
			for _, changed := range m.apply(b.req) {
				check(m.path, changed)
			}
		}
	}
	t.Logf("%d requests resolved and answered, %d keys", requests, len(keys))
}

// unmarshalAnswer decodes an answer of method, to compare answers whatever the
// order of their map entries.
func unmarshalAnswer(t *testing.T, method string, b []byte) proto.Message {
	var m proto.Message
	switch method {
	case "EstimateStep":
		m = &pb.EstimateStepResponse{}
	case "EstimatePlan":
		m = &pb.EstimatePlanResponse{}
	default:
		m = &pb.SimulateCollectiveResponse{}
	}
	if err := proto.Unmarshal(b, m); err != nil {
		t.Fatal(err)
	}
	return m
}
