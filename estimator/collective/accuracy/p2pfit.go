package accuracy

import (
	"math"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/internal/descent"
)

// P2PSmallBytes is the largest send/recv or all-to-all the p2p kernel's fixed cost
// is fitted on: at 64 KiB and less a call is its fixed cost and one handshake with
// each peer, the bytes a few percent of it (docs/calibration.md).
const P2PSmallBytes = 64 << 10

// P2PCases are the scored NCCL send/recv and all-to-all cases of P2PSmallBytes and
// less. RCCL's are not among them: on AMD GPUs the model scales NCCL's whole fixed
// cost of a call, its launch included, by the two libraries' base latencies
// (collective/rccl.go), so an RCCL row fixes that sum, not the p2p kernel's part of
// it; fitted on them too, the kernel's cost took up what a fold's launch split left
// over (one process driving 8 MI355X: eight launches) and priced NCCL's rows left
// out 77–89 % slow.
func P2PCases(cases []Case) []Case {
	var out []Case
	for _, c := range cases {
		if c.Scored && c.Row.Library == "NCCL" && c.Bytes <= P2PSmallBytes && (c.Op == collective.SendRecv || c.Op == collective.AllToAll) {
			out = append(out, c)
		}
	}
	return out
}

// p2pLoss is the mean absolute log error over the priced results.
func p2pLoss(rs []Result) float64 {
	var sum float64
	n := 0
	for _, r := range rs {
		if r.Err != nil || r.Predicted.TimeUs <= 0 || r.MeasuredUs <= 0 {
			continue
		}
		sum += math.Abs(math.Log(r.Predicted.TimeUs / r.MeasuredUs))
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// fitP2P fits the p2p kernel's fixed cost (collective.Constants.P2PBaseUs), if
// params hold it, on the small point-to-point rows among cases, every other
// constant held as k has it. It comes after the collectives' fit: the p2p rows
// pin what one call of one step costs beyond its launch and path, which the
// collectives, whose small calls take many steps, do not split from their
// per-step cost; fitted together with them, the p2p rows pulled the launch and
// the hops the collectives share away from what the collectives measure
// (docs/calibration.md).
func fitP2P(cases []Case, k Knobs, params []Param, rounds int) Knobs {
	var ps []descent.Param[Knobs]
	for _, p := range params {
		if p.Name == "P2PBaseUs" {
			ps = append(ps, descent.Param[Knobs]{Name: p.Name, Min: p.Min, Max: p.Max,
				Get: func(k *Knobs) float64 { return *p.Get(k) },
				Set: func(k *Knobs, v float64) { *p.Get(k) = v }})
		}
	}
	small := P2PCases(cases)
	if len(ps) == 0 || len(small) == 0 {
		return k
	}
	prepared := PrepareWith(small, k.Links)
	eval := func(k Knobs) float64 { return p2pLoss(Price(collective.NewModel(k.K), prepared)) }
	k, _ = descent.Minimise(k, clone, ps, []float64{4, 2, 1.3, 1.1, 1.03, 1 / 1.03, 1 / 1.1, 1 / 1.3, 0.5, 0.25, 0}, max(rounds, 1)*4, eval)
	return k
}
