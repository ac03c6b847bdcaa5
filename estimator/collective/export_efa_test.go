package collective

import "github.com/stepcost/stepcost/estimator/topology"

// OFITunerCovers says whether an all-reduce of bytes on nodes nodes of c, perNode
// ranks on each, falls in one of the OFI tuner's regions, whatever the algorithm's
// applicability.
func OFITunerCovers(c *topology.Cluster, nodes, perNode int, bytes float64) bool {
	regions := ofiAllReduceRegions[ofiKey{ofiPlatformOf(&c.Spec), perNode}]
	q := ofiPt(bytes, float64(perNode*nodes))
	for i := range regions {
		if regions[i].contains(q) {
			return true
		}
	}
	return false
}
