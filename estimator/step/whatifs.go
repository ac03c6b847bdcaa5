package step

import (
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/topology"
)

// The what-ifs' bounds. Each is a fraction of a healthy speed, and the times it
// touches scale with its inverse: unbounded, 1e-300 answers 1e299 s and 5e-324 an
// infinite step. The bounds are the slowest a part still works at; slower, it has
// failed, and a job replaces it rather than waits for it.
const (
	// MinSlowGPUSpeed: a hundredfold slowdown. Clock throttling (thermal, power
	// brake) slows a GPU a few times, not a hundred; a GPU at 1 % is a failed one.
	MinSlowGPUSpeed = 0.01
	// MinDegradedNICSpeed: a 400 Gb/s port that fell back to 1 Gb/s (1/400 =
	// 0.0025) or an InfiniBand NDR port trained to one lane at SDR (2.5 of 400
	// Gb/s, 0.006) is still in range; below a thousandth a link is down, not slow.
	MinDegradedNICSpeed = 0.001
	// MinDegradedLinkSpeed: an H100 left with one of its 18 NVLinks (0.056), or a
	// PCIe 5.0 x16 GPU whose link trained at 1.0 x1 (0.25 of 64 GB/s, 0.004), is
	// still in range.
	MinDegradedLinkSpeed = 0.001
)

// CheckWhatIfs is the one rule of the what-ifs (Request.SlowGPUSpeed,
// DegradedNICSpeed, DegradedLinkSpeed), for one estimate, a search (planner) and a
// request before it is resolved (internal/wire): each is 0 (none) or a fraction
// from its minimum to 1, and a degraded NIC needs a cluster with NICs (c; nil
// before the cluster is known). Fields are named as the API names them.
func CheckWhatIfs(slowGPU, degradedNIC, degradedLink float64, c *topology.Cluster) error {
	return checkWhatIfs([3]string{"slow_gpu_speed", "degraded_nic_speed", "degraded_link_speed"}, slowGPU, degradedNIC, degradedLink, c)
}

// CheckDegradedParts is the rule of one located what-if (a node's degraded parts,
// the planner's DegradedNode), the same as CheckWhatIfs's: field names the entry
// (e.g. "degraded_nodes[2]"), and each speed is named under it (gpu_speed,
// nic_speed, link_speed).
func CheckDegradedParts(field string, gpu, nic, link float64, c *topology.Cluster) error {
	return checkWhatIfs([3]string{field + ".gpu_speed", field + ".nic_speed", field + ".link_speed"}, gpu, nic, link, c)
}

// checkWhatIfs checks a slow GPU's, degraded NICs' and degraded link's speeds,
// naming them fields[0], fields[1] and fields[2].
func checkWhatIfs(fields [3]string, slowGPU, degradedNIC, degradedLink float64, c *topology.Cluster) error {
	var v invalid.Collector
	for i, w := range []struct {
		what   string
		v, min float64
	}{
		{"the slow GPU's fraction of its speed", slowGPU, MinSlowGPUSpeed},
		{"the degraded NICs' fraction of their bandwidth", degradedNIC, MinDegradedNICSpeed},
		{"the degraded link's fraction of its bandwidth", degradedLink, MinDegradedLinkSpeed},
	} {
		if !(w.v == 0 || w.v >= w.min && w.v <= 1) {
			v.Add(fields[i], "must be 0 (none) or from %g to 1, %s (got %v)", w.min, w.what, w.v)
		}
	}
	if degradedNIC > 0 && c != nil && c.Spec.NICs.PerNode == 0 {
		v.Add(fields[1], "the cluster %q has no NICs", c.Spec.Name)
	}
	return v.Err()
}
