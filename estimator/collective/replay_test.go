package collective_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/topology"
)

// replayPlacements are groups of 2, 3, 4, 5, 6, 8, 12, 16 and 24 ranks: one node,
// several nodes with several ranks each, one rank per node (PAT), concurrent groups
// sharing NICs, a mesh and a multi-node NVLink domain.
func replayPlacements(t testing.TB) []placed {
	var out []placed
	add := func(name string, c *topology.Cluster, nodes, perNode int, concurrent bool) {
		g, sib, err := collective.NodeGroups(c, nodes, perNode, concurrent)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, placed{name, mustPlace(t, c, g, sib)})
	}
	h100 := mustCluster(t, "dgx-h100", 5, nil)
	add("dgx-h100/1x8", h100, 1, 8, false)
	add("dgx-h100/1x2", h100, 1, 2, false)
	add("dgx-h100/3x8", h100, 3, 8, false)
	add("dgx-h100/2x4+concurrent", h100, 2, 4, true)
	add("dgx-h100/3x1", h100, 3, 1, false)
	add("dgx-h100/5x1+concurrent", h100, 5, 1, true)
	p4d := mustCluster(t, "aws-p4d", 3, nil)
	add("aws-p4d/3x2+concurrent", p4d, 3, 2, true)
	add("aws-p4d/3x4", p4d, 3, 4, false)
	mi := mustCluster(t, "oci-mi300x", 2, nil)
	add("oci-mi300x/2x8 mesh", mi, 2, 8, false)
	gb := mustCluster(t, "gb200-nvl72", 2, nil)
	add("gb200-nvl72/2x4 one domain", gb, 2, 4, false)
	return out
}

// TestReplayVerifiesEveryAlgorithm replays every (operation, algorithm) the builder
// supports on every placement at sizes that split evenly and unevenly, small enough
// to execute as is and large enough to be executed on a scaled copy, and requires
// the result verified on every rank, the rows to cover every step and add up to the
// schedule's time, and the schedule's price to agree with the closed form.
func TestReplayVerifiesEveryAlgorithm(t *testing.T) {
	m := collective.NewModel(collective.Default())
	seen := map[string]bool{}
	sizes := []float64{4093, 96 << 10, 48<<20 + 7}
	for _, pl := range replayPlacements(t) {
		p := pl.p
		for _, op := range collective.Ops() {
			for _, algo := range collective.Algorithms() {
				if m.Supports(p, op, algo) != nil {
					continue
				}
				for _, size := range sizes {
					e, err := m.Estimate(p, op, size, collective.Options{Algo: algo})
					if err != nil {
						t.Fatal(err)
					}
					name := fmt.Sprintf("%s/%s/%s/%s/%.0fB", pl.name, op, algo, e.Protocol, size)
					r, err := m.Replay(p, e, collective.ReplayOptions{MaxRows: collective.MaxReplayRows})
					if errors.Is(err, collective.ErrNoSchedule) {
						continue // an algorithm priced by its closed form only
					}
					if errors.Is(err, collective.ErrReplayTooLarge) && size > 1<<20 {
						continue // many pipeline chunks
					}
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					seen[op.String()+"/"+algo.String()] = true
					checkReplay(t, name, r, e)
				}
			}
		}
	}
	// Every pair the builder supports was replayed somewhere.
	for _, want := range []string{
		"allreduce/ring", "allgather/ring", "reducescatter/ring", "broadcast/ring", "reduce/ring",
		"allreduce/tree", "allreduce/dbtree", "allreduce/hierarchical",
		"allreduce/nvls", "allgather/nvls", "reducescatter/nvls",
		"allreduce/direct", "allgather/direct", "reducescatter/direct", "alltoall/direct", "broadcast/direct", "reduce/direct", "sendrecv/direct",
		"allgather/pat", "reducescatter/pat", "alltoall/pairwise",
	} {
		if !seen[want] {
			t.Errorf("%s was never replayed", want)
		}
	}
}

func checkReplay(t *testing.T, name string, r *collective.Replay, e collective.Estimate) {
	t.Helper()
	v := r.Verification
	if !v.Verified || v.Error != "" || v.Result == "" || v.Elems <= 0 {
		t.Errorf("%s: not verified: %+v", name, v)
	}
	if r.Algo != e.Algo || r.Protocol != e.Protocol || r.Analytical.TimeUs != e.TimeUs {
		t.Errorf("%s: replay of %v/%v, estimate %v/%v", name, r.Algo, r.Protocol, e.Algo, e.Protocol)
	}
	if r.OmittedRows != 0 {
		t.Errorf("%s: %d rows omitted", name, r.OmittedRows)
	}
	next := 0
	var rowsUs, rowsLat float64
	for _, row := range r.Rows {
		if row.First != next || row.Count < 1 || row.Phase == "" || len(row.Flows) == 0 || row.MaxStepUs > row.TimeUs {
			t.Errorf("%s: row %+v after step %d", name, row, next)
		}
		next += row.Count
		rowsUs += row.TimeUs
		rowsLat += row.LatencyUs
		for _, f := range row.Flows {
			if f.Pairs < 1 || f.MinBytes < 1 || f.MaxBytes < f.MinBytes || f.Bytes < f.MinBytes*int64(row.Count) ||
				len(f.Examples) < 1 || len(f.Examples) > collective.ReplayExamples || f.Route == "" {
				t.Errorf("%s: row %d flow %+v", name, row.First, f)
			}
		}
	}
	if next != r.Steps {
		t.Errorf("%s: rows cover %d steps, the schedule has %d", name, next, r.Steps)
	}
	// The schedule's time is its fixed cost (launch and base, in LatencyUs but in no
	// row) plus the rows' times.
	if fixed := r.LatencyUs - rowsLat; fixed < 0 || math.Abs(fixed+rowsUs-r.TimeUs) > 1e-6*r.TimeUs {
		t.Errorf("%s: fixed %.4f µs + rows %.4f µs, the schedule is %.4f µs", name, fixed, rowsUs, r.TimeUs)
	}
	streamed := e.Algo == collective.Tree || e.Algo == collective.DoubleTree || e.Algo == collective.Ring && (e.Op == collective.Broadcast || e.Op == collective.Reduce)
	got, want := r.TimeUs, e.TimeUs
	if streamed {
		got, want = r.TimeUs-r.LatencyUs, e.TimeUs-e.LatencyUs
		if !strings.Contains(r.Difference, "streams the chunks") {
			t.Errorf("%s: the difference does not explain the streamed chain or tree: %s", name, r.Difference)
		}
	}
	// Sizes that do not fill the pieces (4093 bytes over 16 channels of 24 ranks) make
	// the two levels differ a little more: allow 5 % there, 1 % otherwise.
	tol := 0.01
	if r.Bytes < 1<<20 {
		tol = 0.05
	}
	if rel := got/want - 1; !(math.Abs(rel) <= tol) {
		t.Errorf("%s: schedule %.3f µs, closed form %.3f µs (%+.2f %%): %s", name, got, want, 100*rel, r.Difference)
	}
	if r.Difference == "" || strings.Contains(r.Difference, "not explained") {
		t.Errorf("%s: no explanation: %q", name, r.Difference)
	}
}

// TestReplayRingRows checks the rows of a ring all-reduce across 3 nodes: a
// reduce-scatter row and an all-gather row of n−1 steps each, whose flows cover
// every rank sending to its ring neighbours inside nodes and across them.
func TestReplayRingRows(t *testing.T) {
	m := collective.NewModel(collective.Default())
	c := mustCluster(t, "dgx-h100", 3, nil)
	g, _, err := collective.NodeGroups(c, 3, 8, false)
	if err != nil {
		t.Fatal(err)
	}
	p := mustPlace(t, c, g, nil)
	const size = 3 << 30
	e, err := m.Estimate(p, collective.AllReduce, size, collective.Options{Algo: collective.Ring})
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.Replay(p, e, collective.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 2 || r.Rows[0].Phase != "reduce-scatter" || r.Rows[1].Phase != "all-gather" ||
		r.Rows[0].Count != 23 || r.Rows[1].Count != 23 || r.Rows[1].First != 23 {
		t.Fatalf("rows %+v", r.Rows)
	}
	if !r.Verification.Verified || !r.Verification.Scaled || !strings.Contains(r.Verification.Result, "sum of all 24 ranks") {
		t.Errorf("verification %+v", r.Verification)
	}
	// Every rank sends size/24 per step in all (its 16 channels' pieces), some of it
	// across the network: the reduce-scatter row moves 23 × size bytes over its 23
	// steps, split between the routes.
	var total int64
	routes := map[string]bool{}
	for _, f := range r.Rows[0].Flows {
		if f.Kind != collective.Add {
			t.Errorf("reduce-scatter flow %+v", f)
		}
		total += f.Bytes
		routes[f.Route] = true
	}
	if total != 23*size {
		t.Errorf("reduce-scatter moves %d bytes, want %d", total, int64(23*size))
	}
	// Three nodes: the rings alternate direction node by node, so the crossings from
	// node 0 to 1 and 1 to 2 join GPUs of one rail (NIC to NIC); the wrap from node 2
	// back to node 0 cannot, and goes over NVLink to the GPU of the right rail first.
	if !routes["nvlink"] || !routes["nic→nic"] || !routes["nvlink + nic→nic"] || len(routes) != 3 {
		t.Errorf("routes %v, want nvlink, nic→nic and nvlink + nic→nic", routes)
	}
	if r.Rows[0].Bottleneck == "" || !(r.Rows[0].BottleneckBytes > 0) || !(r.Rows[0].BottleneckGBps > 0) {
		t.Errorf("no bottleneck: %+v", r.Rows[0])
	}
}

func TestReplayLimits(t *testing.T) {
	m := collective.NewModel(collective.Default())
	big := mustCluster(t, "dgx-h100", 64, nil)
	g, _, err := collective.NodeGroups(big, 64, 8, false)
	if err != nil {
		t.Fatal(err)
	}
	p := mustPlace(t, big, g, nil)
	e, err := m.Estimate(p, collective.AllReduce, 1<<30, collective.Options{Algo: collective.Ring})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Replay(p, e, collective.ReplayOptions{}); !errors.Is(err, collective.ErrReplayTooLarge) || !strings.Contains(err.Error(), "512 ranks") {
		t.Errorf("512-rank ring: %v", err)
	}

	// Rows past MaxRows are counted, not returned; pairwise on 24 ranks has 23
	// different steps.
	c := mustCluster(t, "dgx-h100", 3, nil)
	g, _, err = collective.NodeGroups(c, 3, 8, false)
	if err != nil {
		t.Fatal(err)
	}
	p = mustPlace(t, c, g, nil)
	e, err = m.Estimate(p, collective.AllToAll, 1<<20, collective.Options{Algo: collective.Pairwise})
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.Replay(p, e, collective.ReplayOptions{MaxRows: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 5 || r.OmittedRows != 23-5 || r.Steps != 23 || !r.Verification.Verified {
		t.Errorf("%d rows, %d omitted, %d steps, %+v", len(r.Rows), r.OmittedRows, r.Steps, r.Verification)
	}
	for _, bad := range []int{-1, collective.MaxReplayRows + 1} {
		_, err := m.Replay(p, e, collective.ReplayOptions{MaxRows: bad})
		var fe *invalid.Error
		if !errors.As(err, &fe) || fe.Field != "max_rows" || fe.Rule != collective.CheckReplayRows(bad) {
			t.Errorf("MaxRows %d: %v, the rule %q", bad, err, collective.CheckReplayRows(bad))
		}
	}
	for _, good := range []int{0, 1, collective.MaxReplayRows} {
		if why := collective.CheckReplayRows(good); why != "" {
			t.Errorf("MaxRows %d refused: %s", good, why)
		}
	}
	e.Bytes = 1.5
	if _, err := m.Replay(p, e, collective.ReplayOptions{}); !invalid.Is(err) {
		t.Errorf("fractional bytes: %v", err)
	}

	// A group of one moves nothing.
	one := mustPlace(t, c, []int{0}, nil)
	e, err = m.Estimate(one, collective.AllReduce, 1<<20, collective.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := m.Replay(one, e, collective.ReplayOptions{}); err != nil || !r.Verification.Verified || r.Steps != 0 || len(r.Rows) != 0 {
		t.Errorf("one rank: %+v %v", r, err)
	}
}

// TestBrokenScheduleFailsVerification breaks correct schedules in the ways a
// builder could — a step dropped, a transfer dropped, a reduction turned into a
// copy, a transfer sent to the wrong rank — and requires the verification to fail.
func TestBrokenScheduleFailsVerification(t *testing.T) {
	sh := collective.Shape{Node: []int32{0, 0, 0, 1, 1, 1, 2}} // 7 ranks on 3 nodes
	breaks := map[string]func(s *collective.Schedule){
		"step dropped": func(s *collective.Schedule) { s.Steps = append(s.Steps[:2], s.Steps[3:]...) },
		"last step dropped": func(s *collective.Schedule) {
			s.Steps = s.Steps[:len(s.Steps)-1]
		},
		"transfer dropped": func(s *collective.Schedule) {
			st := &s.Steps[1]
			st.Transfers = st.Transfers[1:]
		},
		"add became copy": func(s *collective.Schedule) {
			for i := range s.Steps {
				for j := range s.Steps[i].Transfers {
					if tr := &s.Steps[i].Transfers[j]; tr.Kind == collective.Add {
						tr.Kind = collective.Copy
						return
					}
				}
			}
		},
		// Not any other rank: a reduction sent one hop further along its ring still
		// sums every contribution (a valid schedule); back to its own sender it
		// counts one twice, and a copy to itself delivers nothing.
		"sent to itself": func(s *collective.Schedule) {
			tr := &s.Steps[1].Transfers[0]
			tr.Dst = tr.Src
		},
	}
	for _, c := range []struct {
		op   collective.Op
		algo collective.Algorithm
	}{
		{collective.AllReduce, collective.Ring}, {collective.AllReduce, collective.DoubleTree},
		{collective.ReduceScatter, collective.Ring}, {collective.AllGather, collective.Ring},
		{collective.Broadcast, collective.Ring}, {collective.AllToAll, collective.Pairwise},
	} {
		for name, brk := range breaks {
			t.Run(fmt.Sprintf("%s/%s/%s", c.op, c.algo, name), func(t *testing.T) {
				s, err := collective.Build(c.op, c.algo, sh, 7*12+5, collective.Params{Channels: 2, Chunks: 3})
				if err != nil {
					t.Fatal(err)
				}
				if v := collective.VerifySchedule(s); !v.Verified {
					t.Fatalf("intact schedule not verified: %+v", v)
				}
				if len(s.Steps) < 4 {
					t.Fatalf("only %d steps", len(s.Steps))
				}
				if c.op != collective.AllReduce && c.op != collective.ReduceScatter && name == "add became copy" {
					t.Skip("no reduction")
				}
				brk(s)
				v := collective.VerifySchedule(s)
				if v.Verified || v.Error == "" {
					t.Errorf("broken schedule: %+v", v)
				}
			})
		}
	}
	if v := collective.VerifySchedule(nil); v.Verified {
		t.Error("nil schedule verified")
	}
}

// BenchmarkReplay is the cost of one replay (build twice, execute, price, rows):
// the replay limits are set from it.
func BenchmarkReplay(b *testing.B) {
	m := collective.NewModel(collective.Default())
	c := mustCluster(b, "dgx-h100", 4, nil)
	for _, bc := range []struct {
		nodes int
		algo  collective.Algorithm
		size  float64
	}{
		{4, collective.Ring, 1 << 30},
		{2, collective.DoubleTree, 64 << 20},
		{4, collective.DoubleTree, 256 << 20},
	} {
		g, _, err := collective.NodeGroups(c, bc.nodes, 8, false)
		if err != nil {
			b.Fatal(err)
		}
		p := mustPlace(b, c, g, nil)
		e, err := m.Estimate(p, collective.AllReduce, bc.size, collective.Options{Algo: bc.algo})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("ranks=%d/algo=%s/size=%.0fMiB", p.N(), bc.algo, bc.size/(1<<20)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Replay(p, e, collective.ReplayOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
