package collective

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Execute runs s on real vectors: inputs holds one buffer of s.BufLen elements per
// rank (see BufLen for what they mean) and is not modified; the result is every
// rank's buffer after the last step.
//
// Within a step every transfer reads the buffers as they were when the step began,
// then all writes are applied: Copy overwrites, Add accumulates, SwitchReduce writes
// into Dst the sum over every rank of the group of buf[SrcOff:SrcOff+Len], and
// Multicast writes Src's buf[SrcOff:SrcOff+Len] into every rank's (Src's included)
// buf[DstOff:DstOff+Len].
//
// Every transfer is validated (kind, ranks, ranges inside BufLen, Len ≥ 0), and so is
// every step: an overwrite (Copy, SwitchReduce, Multicast) of a range that any other
// write of the same step also touches is a conflict, as its result would depend on
// the order of the writes; several Adds into one range are fine. Errors name the
// step and the transfer.
func Execute(s *Schedule, inputs [][]float64) ([][]float64, error) {
	if s == nil {
		return nil, errors.New("execute: nil schedule")
	}
	n := s.Shape.N()
	if n < 1 {
		return nil, errors.New("execute: schedule has no ranks")
	}
	if s.BufLen < 0 {
		return nil, fmt.Errorf("execute: negative buffer length %d", s.BufLen)
	}
	if len(inputs) != n {
		return nil, fmt.Errorf("execute: %d input buffers for %d ranks", len(inputs), n)
	}
	bufs := make([][]float64, n)
	for r, in := range inputs {
		if int64(len(in)) != s.BufLen {
			return nil, fmt.Errorf("execute: input of rank %d has %d elements, want %d", r, len(in), s.BufLen)
		}
		bufs[r] = slices.Clone(in)
	}

	x := executor{n: n, bufLen: s.BufLen, bufs: bufs, writes: make([][]write, n)}
	for si := range s.Steps {
		if err := x.step(s.Steps[si].Transfers); err != nil {
			return nil, fmt.Errorf("execute: step %d: %w", si, err)
		}
	}
	return bufs, nil
}

// write is a range [lo, hi) of one rank's buffer written by transfer ti.
type write struct {
	lo, hi    int64
	overwrite bool
	ti        int
}

type executor struct {
	n       int
	bufLen  int64
	bufs    [][]float64
	writes  [][]write // per destination rank, reset every step
	scratch []float64 // the values every transfer of a step will write, in order
}

func (x *executor) step(ts []Transfer) error {
	for r := range x.writes {
		x.writes[r] = x.writes[r][:0]
	}
	var need int64
	for ti, t := range ts {
		if err := x.validate(t); err != nil {
			return fmt.Errorf("transfer %d %s: %w", ti, describe(t), err)
		}
		need += t.Len
		if t.Len == 0 {
			continue
		}
		w := write{lo: t.DstOff, hi: t.DstOff + t.Len, overwrite: t.Kind != Add, ti: ti}
		if t.Kind == Multicast {
			for r := range x.writes {
				x.writes[r] = append(x.writes[r], w)
			}
		} else {
			x.writes[t.Dst] = append(x.writes[t.Dst], w)
		}
	}
	for r, ws := range x.writes {
		if err := conflicts(ws); err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
	}

	// Read everything first, so that every read sees the buffers as they were when
	// the step began.
	if int64(cap(x.scratch)) < need {
		x.scratch = make([]float64, need)
	}
	vals := x.scratch[:need]
	pos := int64(0)
	for _, t := range ts {
		v := vals[pos : pos+t.Len]
		pos += t.Len
		if t.Kind == SwitchReduce {
			clear(v)
			for _, b := range x.bufs {
				for i, e := range b[t.SrcOff : t.SrcOff+t.Len] {
					v[i] += e
				}
			}
			continue
		}
		copy(v, x.bufs[t.Src][t.SrcOff:t.SrcOff+t.Len])
	}

	pos = 0
	for _, t := range ts {
		v := vals[pos : pos+t.Len]
		pos += t.Len
		switch t.Kind {
		case Copy, SwitchReduce:
			copy(x.bufs[t.Dst][t.DstOff:], v)
		case Add:
			d := x.bufs[t.Dst][t.DstOff : t.DstOff+t.Len]
			for i, e := range v {
				d[i] += e
			}
		case Multicast:
			for _, b := range x.bufs {
				copy(b[t.DstOff:], v)
			}
		}
	}
	return nil
}

// validate checks one transfer against the group size and buffer length.
func (x *executor) validate(t Transfer) error {
	inGroup := func(r int32) bool { return r >= 0 && int(r) < x.n }
	switch t.Kind {
	case Copy, Add:
		if !inGroup(t.Src) {
			return fmt.Errorf("source rank %d outside [0, %d)", t.Src, x.n)
		}
		if !inGroup(t.Dst) {
			return fmt.Errorf("destination rank %d outside [0, %d)", t.Dst, x.n)
		}
	case SwitchReduce:
		if t.Src != -1 {
			return fmt.Errorf("switch-reduce reads every rank, its source must be -1 (got %d)", t.Src)
		}
		if !inGroup(t.Dst) {
			return fmt.Errorf("destination rank %d outside [0, %d)", t.Dst, x.n)
		}
	case Multicast:
		if !inGroup(t.Src) {
			return fmt.Errorf("source rank %d outside [0, %d)", t.Src, x.n)
		}
		if t.Dst != -1 {
			return fmt.Errorf("multicast writes every rank, its destination must be -1 (got %d)", t.Dst)
		}
	default:
		return fmt.Errorf("unknown transfer kind %d", t.Kind)
	}
	if t.Len < 0 {
		return fmt.Errorf("negative length %d", t.Len)
	}
	if t.SrcOff < 0 || t.SrcOff > x.bufLen-t.Len {
		return fmt.Errorf("source range [%d, %d+%d) outside the buffer of %d elements", t.SrcOff, t.SrcOff, t.Len, x.bufLen)
	}
	if t.DstOff < 0 || t.DstOff > x.bufLen-t.Len {
		return fmt.Errorf("destination range [%d, %d+%d) outside the buffer of %d elements", t.DstOff, t.DstOff, t.Len, x.bufLen)
	}
	return nil
}

// conflicts reports an overwrite that overlaps another write of the same rank in
// the same step. It sorts ws.
func conflicts(ws []write) error {
	if len(ws) < 2 {
		return nil
	}
	slices.SortFunc(ws, func(a, b write) int {
		if a.lo != b.lo {
			return cmp.Compare(a.lo, b.lo)
		}
		return a.ti - b.ti
	})
	// Sweep by start: an earlier-starting write overlaps the current one iff it ends
	// after the current one starts, so the furthest end seen so far (of any write,
	// and of overwrites) decides.
	var end, owEnd int64
	endBy, owBy := -1, -1
	for _, w := range ws {
		if w.overwrite && endBy >= 0 && w.lo < end {
			return fmt.Errorf("transfer %d overwrites [%d, %d), which transfer %d also writes", w.ti, w.lo, w.hi, endBy)
		}
		if !w.overwrite && owBy >= 0 && w.lo < owEnd {
			return fmt.Errorf("transfer %d overwrites [%d, %d), which transfer %d also writes", owBy, w.lo, min(w.hi, owEnd), w.ti)
		}
		if endBy < 0 || w.hi > end {
			end, endBy = w.hi, w.ti
		}
		if w.overwrite && (owBy < 0 || w.hi > owEnd) {
			owEnd, owBy = w.hi, w.ti
		}
	}
	return nil
}

// describe formats a transfer for error messages.
func describe(t Transfer) string {
	return fmt.Sprintf("(%v %d→%d, [%d,+%d)→[%d,+%d))", t.Kind, t.Src, t.Dst, t.SrcOff, t.Len, t.DstOff, t.Len)
}
