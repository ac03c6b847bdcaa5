package server

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// wireAnswer is an answer's bytes as the daemon sent them (wireCodec).
type wireAnswer struct{ b []byte }

// wireCodec sends requests as protobuf and keeps answers' bytes undecoded.
type wireCodec struct{}

func (wireCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (wireCodec) Unmarshal(data mem.BufferSlice, v any) error {
	v.(*wireAnswer).b = data.Materialize()
	return nil
}

func (wireCodec) Name() string { return "proto" }

// withoutPerCall is an EstimatePlanResponse's bytes without the two fields that
// describe the call rather than the question (cached, stats.elapsed_ms), the
// rest left as sent.
func withoutPerCall(t *testing.T, b []byte) []byte {
	t.Helper()
	drop := func(b []byte, field protowire.Number, inner func([]byte) []byte) []byte {
		var out []byte
		for len(b) > 0 {
			num, typ, n := protowire.ConsumeTag(b)
			if n < 0 {
				t.Fatalf("answer does not decode: %v", protowire.ParseError(n))
			}
			m := protowire.ConsumeFieldValue(num, typ, b[n:])
			if m < 0 {
				t.Fatalf("answer does not decode: %v", protowire.ParseError(m))
			}
			switch {
			case num == field && inner == nil:
			case num == field:
				v, _ := protowire.ConsumeBytes(b[n : n+m])
				out = protowire.AppendTag(out, num, typ)
				out = protowire.AppendBytes(out, inner(v))
			default:
				out = append(out, b[:n+m]...)
			}
			b = b[n+m:]
		}
		return out
	}
	const cached, stats, elapsed = 6, 3, 6
	b = drop(b, cached, nil)
	return drop(b, stats, func(s []byte) []byte { return drop(s, elapsed, nil) })
}

// The same EstimatePlan request gets the same bytes: 20 times at once and 20
// times one after the other with the cache on, computed afresh with the cache off,
// and from a restarted daemon. Only cached and stats.elapsed_ms describe the
// call. The answer's search statistics hold a map (pruned, by reason), which a
// protobuf encoder writes in Go's map order unless told to be deterministic.
func TestEstimatePlanAnswersAreByteIdentical(t *testing.T) {
	req := &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-70b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
		Training: &pb.Training{SeqLen: 8192, GlobalBatch: 512}, MinGpus: 16, MaxGpus: 64, TopK: 3}
	ask := func(conn *grpc.ClientConn) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var out wireAnswer
		if err := conn.Invoke(ctx, "/stepcost.v1.StepcostService/EstimatePlan", req, &out, grpc.ForceCodecV2(wireCodec{})); err != nil {
			t.Fatal(err)
		}
		return out.b
	}
	// answers asks n times, at once or one after the other.
	answers := func(conn *grpc.ClientConn, n int, concurrent bool) [][]byte {
		out := make([][]byte, n)
		var wg sync.WaitGroup
		for i := range out {
			if !concurrent {
				out[i] = ask(conn)
				continue
			}
			wg.Go(func() { out[i] = ask(conn) })
		}
		wg.Wait()
		return out
	}
	same := func(what string, want []byte, got [][]byte, strip bool) {
		t.Helper()
		if strip {
			want = withoutPerCall(t, want)
		}
		for i, g := range got {
			if strip {
				g = withoutPerCall(t, g)
			}
			if !bytes.Equal(g, want) {
				t.Errorf("%s: answer %d differs from the first (%d and %d bytes)", what, i, len(g), len(want))
			}
		}
	}
	run := func(edit func(*Config)) *grpc.ClientConn {
		d := startDaemon(t, edit)
		conn, err := grpc.NewClient(d.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			conn.Close()
			if err := d.stop(); err != nil {
				t.Error(err)
			}
		})
		return conn
	}

	conn := run(nil)
	first := ask(conn)
	var resp pb.EstimatePlanResponse
	if err := proto.Unmarshal(first, &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.GetStats().GetPruned()) < 2 || len(resp.GetPlans()) == 0 {
		t.Fatalf("the request should find plans and prune for several reasons: %v", resp.GetStats())
	}
	// The cache stores the first answer asynchronously (ristretto's Set is
	// buffered, and the request path never waits for it), so on a loaded machine
	// some of the 20 concurrent requests may still compute afresh: they differ from
	// a cached answer only in cached and stats.elapsed_ms, which are stripped.
	cachedAnswers := append(answers(conn, 20, true), answers(conn, 20, false)...)
	same("cached", first, cachedAnswers, true)

	fresh := run(func(c *Config) { c.CacheMaxBytes = 0 })
	same("no cache, at once", first, answers(fresh, 20, true), true)
	same("no cache, in turn", first, answers(fresh, 20, false), true)

	restarted := run(nil)
	same("restarted", first, [][]byte{ask(restarted)}, true)
}
