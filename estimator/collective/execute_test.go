package collective

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// manual builds a hand-written schedule of an all-reduce on n ranks.
func manual(n int, bufLen int64, steps ...[]Transfer) *Schedule {
	s := &Schedule{Op: AllReduce, Algo: Direct, Shape: uniformShape(n, n), Elems: bufLen, BufLen: bufLen}
	for _, ts := range steps {
		s.Steps = append(s.Steps, Step{Transfers: ts})
	}
	return s
}

func bufs(vals ...[]float64) [][]float64 { return vals }

func TestExecuteSemantics(t *testing.T) {
	// A swap in one step works because reads see the start of the step.
	s := manual(2, 2, []Transfer{
		{Kind: Copy, Src: 0, Dst: 1, Len: 2},
		{Kind: Copy, Src: 1, Dst: 0, Len: 2},
	})
	in := bufs([]float64{1, 2}, []float64{3, 4})
	out, err := Execute(s, in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out[0], []float64{3, 4}) || !slices.Equal(out[1], []float64{1, 2}) {
		t.Errorf("swap: %v", out)
	}
	if !slices.Equal(in[0], []float64{1, 2}) {
		t.Error("Execute modified its input")
	}

	// Adds accumulate and see the start of the step: rank 1 adds its old value.
	s = manual(3, 1, []Transfer{
		{Kind: Add, Src: 1, Dst: 0, Len: 1},
		{Kind: Add, Src: 2, Dst: 0, Len: 1},
		{Kind: Add, Src: 0, Dst: 1, Len: 1},
	})
	out, err = Execute(s, bufs([]float64{1}, []float64{10}, []float64{100}))
	if err != nil {
		t.Fatal(err)
	}
	if out[0][0] != 111 || out[1][0] != 11 || out[2][0] != 100 {
		t.Errorf("adds: %v", out)
	}

	// Switch-reduce sums every rank; multicast reaches every rank, the source too.
	s = manual(3, 4,
		[]Transfer{{Kind: SwitchReduce, Src: -1, Dst: 1, SrcOff: 0, DstOff: 2, Len: 2}},
		[]Transfer{{Kind: Multicast, Src: 1, Dst: -1, SrcOff: 2, DstOff: 0, Len: 2}},
	)
	out, err = Execute(s, bufs([]float64{1, 2, 0, 0}, []float64{10, 20, 0, 0}, []float64{100, 200, 0, 0}))
	if err != nil {
		t.Fatal(err)
	}
	for r := range 3 {
		if out[r][0] != 111 || out[r][1] != 222 {
			t.Errorf("rank %d after multicast: %v", r, out[r])
		}
	}
	if out[1][2] != 111 || out[1][3] != 222 || out[0][2] != 0 {
		t.Errorf("switch-reduce: %v", out)
	}

	// Adjacent copies and several adds into one range are not conflicts.
	s = manual(3, 4, []Transfer{
		{Kind: Copy, Src: 1, Dst: 0, SrcOff: 0, DstOff: 0, Len: 2},
		{Kind: Copy, Src: 2, Dst: 0, SrcOff: 2, DstOff: 2, Len: 2},
		{Kind: Add, Src: 0, Dst: 1, Len: 4},
		{Kind: Add, Src: 2, Dst: 1, SrcOff: 1, DstOff: 1, Len: 2},
		{Kind: Copy, Src: 1, Dst: 1, SrcOff: 0, DstOff: 0, Len: 0},
	})
	if _, err := Execute(s, bufs(make([]float64, 4), make([]float64, 4), make([]float64, 4))); err != nil {
		t.Errorf("legal step rejected: %v", err)
	}
}

func TestExecuteRejects(t *testing.T) {
	zero := func(n int, l int64) [][]float64 {
		out := make([][]float64, n)
		for r := range out {
			out[r] = make([]float64, l)
		}
		return out
	}
	cases := []struct {
		name string
		t    []Transfer
		want string
	}{
		{"source rank", []Transfer{{Kind: Copy, Src: 3, Dst: 0, Len: 1}}, "source rank 3"},
		{"negative source rank", []Transfer{{Kind: Add, Src: -1, Dst: 0, Len: 1}}, "source rank -1"},
		{"destination rank", []Transfer{{Kind: Copy, Src: 0, Dst: 7, Len: 1}}, "destination rank 7"},
		{"negative length", []Transfer{{Kind: Copy, Src: 0, Dst: 1, Len: -1}}, "negative length"},
		{"source range", []Transfer{{Kind: Copy, Src: 0, Dst: 1, SrcOff: 3, Len: 2}}, "source range"},
		{"destination range", []Transfer{{Kind: Copy, Src: 0, Dst: 1, DstOff: 5, Len: 0}}, "destination range"},
		{"negative offset", []Transfer{{Kind: Add, Src: 0, Dst: 1, SrcOff: -1, Len: 1}}, "source range"},
		{"overflowing offset", []Transfer{{Kind: Add, Src: 0, Dst: 1, DstOff: math.MaxInt64, Len: 2}}, "destination range"},
		{"huge length", []Transfer{{Kind: Copy, Src: 0, Dst: 1, Len: math.MaxInt64}}, "source range"},
		{"unknown kind", []Transfer{{Kind: Kind(9), Src: 0, Dst: 1, Len: 1}}, "unknown transfer kind"},
		{"switch-reduce source", []Transfer{{Kind: SwitchReduce, Src: 0, Dst: 1, Len: 1}}, "must be -1"},
		{"switch-reduce destination", []Transfer{{Kind: SwitchReduce, Src: -1, Dst: -1, Len: 1}}, "destination rank -1"},
		{"multicast destination", []Transfer{{Kind: Multicast, Src: 0, Dst: 1, Len: 1}}, "must be -1"},
		{"multicast source", []Transfer{{Kind: Multicast, Src: 3, Dst: -1, Len: 1}}, "source rank 3"},
		{"two copies", []Transfer{
			{Kind: Copy, Src: 0, Dst: 2, DstOff: 0, Len: 2},
			{Kind: Copy, Src: 1, Dst: 2, DstOff: 1, Len: 2},
		}, "rank 2: transfer 1 overwrites [1, 3)"},
		{"copy then add", []Transfer{
			{Kind: Add, Src: 0, Dst: 2, DstOff: 2, Len: 2},
			{Kind: Copy, Src: 1, Dst: 2, DstOff: 0, Len: 3},
		}, "overwrites"},
		{"add inside copy", []Transfer{
			{Kind: Copy, Src: 1, Dst: 2, DstOff: 0, Len: 4},
			{Kind: Add, Src: 0, Dst: 2, DstOff: 1, Len: 1},
		}, "transfer 0 overwrites"},
		{"copy and multicast", []Transfer{
			{Kind: Copy, Src: 1, Dst: 0, DstOff: 3, Len: 1},
			{Kind: Multicast, Src: 2, Dst: -1, SrcOff: 0, DstOff: 2, Len: 2},
		}, "rank 0"},
		{"two switch-reduces", []Transfer{
			{Kind: SwitchReduce, Src: -1, Dst: 1, Len: 2},
			{Kind: SwitchReduce, Src: -1, Dst: 1, SrcOff: 2, DstOff: 1, Len: 2},
		}, "overwrites"},
	}
	for _, c := range cases {
		s := manual(3, 4, nil, c.t)
		_, err := Execute(s, zero(3, 4))
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "step 1") {
			t.Errorf("%s: error %q does not mention step 1 and %q", c.name, err, c.want)
		}
	}

	s := manual(3, 4)
	for name, in := range map[string][][]float64{
		"too few buffers": zero(2, 4),
		"short buffer":    {make([]float64, 4), make([]float64, 3), make([]float64, 4)},
	} {
		if _, err := Execute(s, in); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := Execute(nil, nil); err == nil {
		t.Error("nil schedule accepted")
	}
	if _, err := Execute(&Schedule{}, nil); err == nil {
		t.Error("schedule without ranks accepted")
	}
	if _, err := Execute(&Schedule{Shape: uniformShape(1, 1), BufLen: -1}, zero(1, 0)); err == nil {
		t.Error("negative buffer length accepted")
	}
}

// TestExecuteNoPanic runs random, mostly invalid schedules: Execute must return an
// error or a result, never panic.
func TestExecuteNoPanic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(vals ...int64) int64 { return vals[rng.IntN(len(vals))] }
	for range 3000 {
		n := 1 + rng.IntN(4)
		l := int64(rng.IntN(6))
		var ts []Transfer
		for range rng.IntN(4) {
			ts = append(ts, Transfer{
				Kind:   Kind(rng.IntN(5)),
				Src:    int32(pick(-2, -1, 0, 1, 2, 3, 4)),
				Dst:    int32(pick(-2, -1, 0, 1, 2, 3, 4)),
				SrcOff: pick(-1, 0, 1, 2, 5, math.MaxInt64, math.MinInt64),
				DstOff: pick(-1, 0, 1, 3, 6, math.MaxInt64),
				Len:    pick(-1, 0, 1, 2, 6, math.MaxInt64),
			})
		}
		s := manual(n, l, ts)
		in := make([][]float64, n)
		for r := range in {
			in[r] = make([]float64, l)
		}
		_, _ = Execute(s, in)
	}
}

func TestCheckFindsErrors(t *testing.T) {
	sh := uniformShape(4, 2)
	for _, op := range Ops() {
		s, err := Build(op, Direct, sh, 10, Params{Channels: 1, Chunks: 1, Root: 1})
		if err != nil {
			t.Fatal(err)
		}
		in := randomInputs(rand.New(rand.NewPCG(3, uint64(op))), 4, s.BufLen)
		out, err := Execute(s, in)
		if err != nil {
			t.Fatal(err)
		}
		if err := Check(s, in, out); err != nil {
			t.Fatalf("%v: %v", op, err)
		}
		// Corrupt one element every op constrains: the last rank's (or the root's)
		// first constrained element.
		rank, idx := 3, int64(0)
		switch op {
		case Reduce:
			rank = 1
		case ReduceScatter:
			idx, _ = Part(10, 4, 3)
		case AllToAll:
			idx = a2aRecvOff(4, 10, 0)
		case SendRecv:
			idx = 10
		}
		out[rank][idx] += 0.5
		err = Check(s, in, out)
		if err == nil {
			t.Errorf("%v: corruption of rank %d element %d not found", op, rank, idx)
			continue
		}
		for _, want := range []string{"rank 3", "element", "got", "want"} {
			if op == Reduce {
				want = strings.Replace(want, "rank 3", "rank 1", 1)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v: error %q does not mention %q", op, err, want)
			}
		}
	}

	s, _ := Build(AllReduce, Ring, sh, 8, Params{Channels: 1, Chunks: 1})
	in := randomInputs(rand.New(rand.NewPCG(4, 4)), 4, 8)
	if err := Check(s, in, in[:3]); err == nil {
		t.Error("missing output accepted")
	}
	if err := Check(s, in, [][]float64{in[0], in[1], in[2], in[3][:7]}); err == nil {
		t.Error("short output accepted")
	}
	if err := Check(nil, in, in); err == nil {
		t.Error("nil schedule accepted")
	}
	bad := *s
	bad.BufLen = 9
	if err := Check(&bad, in, in); err == nil {
		t.Error("wrong buffer length accepted")
	}
}

func TestBufLen(t *testing.T) {
	cases := []struct {
		op    Op
		n     int
		elems int64
		want  int64
	}{
		{AllReduce, 4, 10, 10},
		{AllGather, 4, 10, 10},
		{AllToAll, 4, 10, 10 + 4*3},
		{AllToAll, 4, 8, 16},
		{AllToAll, 4, 3, 3 + 4},
		{AllToAll, 1, 5, 10},
		{SendRecv, 3, 7, 14},
		{AllToAll, 4, 0, 0},
		{AllReduce, 0, 10, -1},
		{AllReduce, 2, -1, -1},
		{Op(42), 2, 1, -1},
		{SendRecv, 2, math.MaxInt64/2 + 1, -1},
		{AllToAll, 3, math.MaxInt64 - 1, -1},
	}
	for _, c := range cases {
		if got := BufLen(c.op, c.n, c.elems); got != c.want {
			t.Errorf("BufLen(%v, %d, %d) = %d, want %d", c.op, c.n, c.elems, got, c.want)
		}
	}
}
