package step

import (
	"math/rand/v2"
	"testing"

	"github.com/stepcost/stepcost/estimator/model"
)

// The bounds time DualPipe over the first rank pair of each kind only
// (stagePairs.firsts): for dense and MoE models (DeepSeek-V3's dense first layers
// and prediction module, one with MoE layers every third), even and uneven splits, every recomputation and random
// layer times, that gives what every pair gives, to the bit.
func TestDualPipeFirstPairsLikeEvery(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	checked, fewer := 0, 0
	var archs []model.Arch
	for _, name := range []string{"llama3-405b", "mixtral-8x7b", "deepseek-v3"} {
		a, err := model.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		archs = append(archs, a)
	}
	// Every third layer MoE after two dense ones: pairs of one size that differ
	// in their dense and MoE layers.
	mixed := archs[1]
	moe := *mixed.MoE
	moe.Frequency, moe.FirstDense = 3, 2
	mixed.MoE, mixed.Name = &moe, "mixed"
	archs = append(archs, mixed)
	for _, a := range archs {
		name := a.Name
		for _, pp := range []int{2, 4, 6, 8, 16, 32} {
			if pp > a.Layers {
				continue
			}
			splits := [][]int{nil}
			if s := EvenSplit(a.Layers, pp); s[0] > 1 {
				s[0]--
				s[pp-1]++
				splits = append(splits, s)
			}
			for _, split := range splits {
				for _, rc := range []Recompute{RecomputeNone, RecomputeSelective, RecomputeFull, RecomputeOps} {
					req := Request{Model: a, Layout: Layout{PP: pp, TP: 1, DP: 1, CP: 1, LayerSplit: split, Recompute: rc, Schedule: DualPipe}}
					var c BoundsCache
					pairs := c.dualPipePairs(&req)
					for range 20 {
						var cp computeParts
						for _, lt := range []*layerTimes{&cp.lc, &cp.lcMoE} {
							lt.fwd, lt.bwd, lt.bwdW = rng.Float64(), rng.Float64(), rng.Float64()
							lt.modsFwd, lt.opsFwd, lt.weightCast = rng.Float64(), rng.Float64(), rng.Float64()
							if rng.IntN(4) == 0 { // ties between kinds
								*lt = cp.lc
							}
						}
						cp.stageLayers = stageLayerCount(a.Layers, &req.Layout)
						logits, bwd, w, emb := rng.Float64(), rng.Float64(), rng.Float64(), rng.Float64()
						want := cp.dualPipeOf(&req.Layout, pairs.dense, pairs.moe, logits, bwd, w, emb)
						got := cp.dualPipeOfRanks(&req.Layout, pairs.dense, pairs.moe, pairs.firsts, logits, bwd, w, emb)
						if got != want {
							t.Fatalf("%s pp %d split %v %s: first pairs %+v, every pair %+v", name, pp, split, rc, got, want)
						}
						checked++
					}
					if pairs.firsts != nil && len(pairs.firsts) < pp/2 {
						fewer++
					}
				}
			}
		}
	}
	if checked < 1000 || fewer == 0 {
		t.Fatalf("%d checked, %d pairings with fewer kinds than pairs", checked, fewer)
	}
}
