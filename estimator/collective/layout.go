package collective

import (
	"errors"
	"fmt"
	"math"
)

// Buffer layouts. Every rank of a schedule works on one buffer of BufLen elements;
// what a rank's buffer holds before and after an operation is fixed per Op:
//
//   - AllReduce: BufLen = Elems. Every rank starts with its input and ends with the
//     element-wise sum of all ranks' inputs.
//   - AllGather: BufLen = Elems (the total of all ranks). Rank r starts with its block
//     r = Part(Elems, n, r) filled (the rest is arbitrary) and ends with every rank's
//     block at that block's position.
//   - ReduceScatter: BufLen = Elems (the total). Every rank starts with a full input;
//     afterwards rank r's block r = Part(Elems, n, r) holds the sum over all ranks of
//     block r. Other positions are unconstrained.
//   - AllToAll: Elems is the per-rank send buffer [0, Elems), split into n blocks by
//     Part(Elems, n, j); block j goes to rank j. The receive region follows it in
//     slots of S = ceil(Elems/n) elements: rank j receives rank r's block j (of length
//     Part(Elems, n, j)) at Elems + r·S. BufLen = Elems + n·S, so sizes that n does
//     not divide need no special case. Afterwards rank j's receive slot r equals rank
//     r's send block j (a transpose); the send region is unconstrained.
//   - Broadcast: BufLen = Elems; the root's buffer ends up on every rank.
//   - Reduce: BufLen = Elems; the root ends up with the sum of all inputs (the other
//     ranks' buffers are unconstrained).
//   - SendRecv: BufLen = 2·Elems; [0, Elems) is the send buffer and [Elems, 2·Elems)
//     the receive buffer. Rank r sends to rank (r+1) mod n (nccl-tests sendrecv_perf)
//     and afterwards rank (r+1) mod n's receive buffer equals rank r's send buffer.
//     With one rank, the rank sends to itself.

// BufLen is the length of every rank's working buffer for op on n ranks with elems
// elements (see the layouts above). It returns −1 if n < 1, elems < 0, op is unknown
// or the length does not fit in an int64.
func BufLen(op Op, n int, elems int64) int64 {
	if n < 1 || elems < 0 {
		return -1
	}
	switch op {
	case AllReduce, AllGather, ReduceScatter, Broadcast, Reduce:
		return elems
	case AllToAll:
		slot := a2aSlot(n, elems)
		if slot > 0 && int64(n) > (math.MaxInt64-elems)/slot {
			return -1
		}
		return elems + int64(n)*slot
	case SendRecv:
		if elems > math.MaxInt64/2 {
			return -1
		}
		return 2 * elems
	}
	return -1
}

// a2aSlot is the stride of the all-to-all receive slots: ceil(elems/n).
func a2aSlot(n int, elems int64) int64 {
	q := elems / int64(n)
	if elems%int64(n) != 0 {
		q++
	}
	return q
}

// a2aRecvOff is where rank dst keeps the block it receives from rank src.
func a2aRecvOff(n int, elems int64, src int) int64 {
	return elems + int64(src)*a2aSlot(n, elems)
}

// Check verifies that outputs is what s.Op must produce from inputs (one buffer of
// s.BufLen elements per rank), on every rank, with the layouts described above. Sums
// are compared with a tolerance of the order of float64 rounding in an n-term sum
// (integer-valued inputs compare exactly); copies must match exactly. The error names
// the first wrong rank and element with the value found and the value wanted.
func Check(s *Schedule, inputs, outputs [][]float64) error {
	if s == nil {
		return errors.New("check: nil schedule")
	}
	n := s.Shape.N()
	if n < 1 {
		return errors.New("check: schedule has no ranks")
	}
	if s.Op >= numOps {
		return fmt.Errorf("check: unknown collective %v", s.Op)
	}
	if want := BufLen(s.Op, n, s.Elems); want < 0 || s.BufLen != want {
		return fmt.Errorf("check: schedule buffer length %d, want %d for %v of %d elements on %d ranks", s.BufLen, want, s.Op, s.Elems, n)
	}
	if len(inputs) != n || len(outputs) != n {
		return fmt.Errorf("check: %d inputs and %d outputs for %d ranks", len(inputs), len(outputs), n)
	}
	for r := range n {
		if int64(len(inputs[r])) != s.BufLen {
			return fmt.Errorf("check: input of rank %d has %d elements, want %d", r, len(inputs[r]), s.BufLen)
		}
		if int64(len(outputs[r])) != s.BufLen {
			return fmt.Errorf("check: output of rank %d has %d elements, want %d", r, len(outputs[r]), s.BufLen)
		}
	}
	if (s.Op == Broadcast || s.Op == Reduce) && (s.Params.Root < 0 || s.Params.Root >= n) {
		return fmt.Errorf("check: root %d outside [0, %d)", s.Params.Root, n)
	}

	e := s.Elems
	switch s.Op {
	case AllReduce:
		sum, tol := sums(inputs, 0, e)
		for r := range n {
			if err := compare(r, outputs[r], 0, sum, tol); err != nil {
				return err
			}
		}
	case Reduce:
		sum, tol := sums(inputs, 0, e)
		return compare(s.Params.Root, outputs[s.Params.Root], 0, sum, tol)
	case ReduceScatter:
		for r := range n {
			off, l := Part(e, n, r)
			sum, tol := sums(inputs, off, l)
			if err := compare(r, outputs[r], off, sum, tol); err != nil {
				return err
			}
		}
	case AllGather:
		for r := range n {
			for b := range n {
				off, l := Part(e, n, b)
				if err := compare(r, outputs[r], off, inputs[b][off:off+l], nil); err != nil {
					return err
				}
			}
		}
	case Broadcast:
		for r := range n {
			if err := compare(r, outputs[r], 0, inputs[s.Params.Root][:e], nil); err != nil {
				return err
			}
		}
	case AllToAll:
		for j := range n {
			off, l := Part(e, n, j)
			for src := range n {
				if err := compare(j, outputs[j], a2aRecvOff(n, e, src), inputs[src][off:off+l], nil); err != nil {
					return err
				}
			}
		}
	case SendRecv:
		for r := range n {
			dst := (r + 1) % n
			if err := compare(dst, outputs[dst], e, inputs[r][:e], nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// sums returns the element-wise sum over ranks of bufs[r][off:off+l] and, per
// element, the tolerance a float64 sum of those terms in any order may miss it by.
func sums(bufs [][]float64, off, l int64) (sum, tol []float64) {
	sum = make([]float64, l)
	abs := make([]float64, l)
	for _, b := range bufs {
		for i, v := range b[off : off+l] {
			sum[i] += v
			abs[i] += math.Abs(v)
		}
	}
	// Any summation order errs by at most (n−1)·ε·Σ|x| with ε = 2⁻⁵³; allow 8× that.
	f := float64(len(bufs)) * 0x1p-50
	for i := range abs {
		abs[i] *= f
	}
	return sum, abs
}

// compare checks got[off+i] against want[i] for every i, within tol[i] if tol is
// not nil.
func compare(rank int, got []float64, off int64, want, tol []float64) error {
	for i, w := range want {
		g := got[off+int64(i)]
		if g == w || (math.IsNaN(g) && math.IsNaN(w)) {
			continue
		}
		if tol != nil && math.Abs(g-w) <= tol[i] {
			continue
		}
		return fmt.Errorf("rank %d element %d: got %v, want %v", rank, off+int64(i), g, w)
	}
	return nil
}
