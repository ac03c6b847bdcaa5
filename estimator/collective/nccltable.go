package collective

import "math"

// NCCLTime is one entry of NCCL's own tuning model for a call (ncclchoice.go):
// an algorithm and protocol NCCL considers, with its predicted time split into
// the latency term and the transfer term (bytes over NCCL's algorithm bandwidth).
// Calibration reads it to reason about NCCL's choice where a cluster's
// measurements show another algorithm than the table picks (estimator/calibrate).
type NCCLTime struct {
	Algo       Algorithm
	Protocol   Protocol
	LatencyUs  float64
	TransferUs float64
}

// TimeUs is the entry's predicted time.
func (t NCCLTime) TimeUs() float64 { return t.LatencyUs + t.TransferUs }

// NCCLTable lists NCCL's tuning-model times of op on bytes on the placement for
// every algorithm and protocol NCCL considers there and the model can run — the
// entries whose arg-min Auto runs. It is nil where Auto does not run NCCL's choice
// (send/recv, all-to-all, AMD GPUs).
func (m *Model) NCCLTable(p *Placement, op Op, bytes float64) []NCCLTime {
	if op != AllReduce && op != AllGather && op != ReduceScatter && op != Broadcast && op != Reduce {
		return nil
	}
	if p.N() == 1 || !(bytes > 0) || bytes > maxBytes {
		return nil
	}
	g, ok := ncclGraphOf(p)
	if !ok {
		return nil
	}
	var out []NCCLTime
	for a := range nNCCLAlgos {
		if !g.eligible(op, a) || !m.autoRuns(p, op, ncclAlgo[a]) {
			continue
		}
		for pi, pr := range ncclProtos {
			if lat, x := g.parts(op, a, pi, bytes); lat >= 0 && !math.IsInf(lat+x, 0) {
				out = append(out, NCCLTime{Algo: ncclAlgo[a], Protocol: pr, LatencyUs: lat, TransferUs: x})
			}
		}
	}
	return out
}
