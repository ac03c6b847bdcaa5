package planner

// SearchGPUs is the number of GPUs a search of req places, summed over the job
// sizes it tries (gpuCounts): a fixed-size search counts its size, a range up to
// MaxGPUs on 8-GPU nodes 8 + 16 + … + MaxGPUs. The search places every size for
// every TP degree and keeps those placements while it runs, so this sum, not the
// number of layouts, is what makes a wide range search big in time and memory
// (about 150 bytes a GPU: a range up to 4 096 GPUs ≈ 1 M ≈ 160 MB). A service
// bounds and schedules searches by it before running them.
func SearchGPUs(req Request) int {
	if req.GPUs > 0 {
		return req.GPUs
	}
	if req.Cluster == nil { // no node size yet: every size in the range counts
		lo := max(1, req.MinGPUs)
		if req.MaxGPUs < lo {
			return 0
		}
		return (lo + req.MaxGPUs) * (req.MaxGPUs - lo + 1) / 2
	}
	sum := 0
	for _, n := range gpuCounts(&req) {
		sum += n
	}
	return sum
}
