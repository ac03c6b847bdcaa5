package collective

import "github.com/stepcost/stepcost/estimator/topology"

// OFITunerCovers says whether an all-reduce of bytes on nodes full nodes of c falls
// in one of the OFI tuner's regions, whatever the algorithm's applicability.
func OFITunerCovers(c *topology.Cluster, nodes int, bytes float64) bool {
	regions := ofiAllReduceRegions[ofiPlatformOf(&c.Spec)]
	q := ofiPt(bytes, float64(8*nodes))
	for i := range regions {
		if regions[i].contains(q) {
			return true
		}
	}
	return false
}
