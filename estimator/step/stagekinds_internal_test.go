package step

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/model"
)

// stageKinds counts each stage's MoE layers by arithmetic; walking the layers with
// IsMoELayer gives the same counts for every split, frequency and dense prefix.
func TestStageKindsCountsEveryLayer(t *testing.T) {
	for _, layers := range []int{1, 7, 24, 61, 96} {
		for _, moe := range []*model.MoE{nil, {Experts: 8, TopK: 2}, {Experts: 64, TopK: 6, Frequency: 2},
			{Experts: 256, TopK: 8, FirstDense: 3}, {Experts: 16, TopK: 1, FirstDense: 2, Frequency: 3}} {
			a := model.Arch{Layers: layers, MoE: moe, MTPLayers: 1}
			for pp := 1; pp <= min(layers, 20); pp++ {
				splits := [][]int{nil, EvenSplit(layers, pp)}
				if pp > 1 {
					// The first stage one layer lighter, the last one heavier.
					s := EvenSplit(layers, pp)
					if s[0] > 1 {
						s[0]--
						s[pp-1]++
						splits = append(splits, s)
					}
				}
				for _, split := range splits {
					req := Request{Model: a, Layout: Layout{PP: pp, LayerSplit: split}}
					var buf stageKindsBuf
					dense, moeN := stageKinds(&req, buf[:])
					want := split
					if want == nil {
						want = EvenSplit(layers, pp)
					}
					layer := 0
					for st, n := range want {
						wd, wm := 0, 0
						for range n {
							if a.IsMoELayer(layer) {
								wm++
							} else {
								wd++
							}
							layer++
						}
						if st == pp-1 {
							if moe != nil {
								wm += a.MTPLayers
							} else {
								wd += a.MTPLayers
							}
						}
						if dense[st] != wd || moeN[st] != wm {
							t.Fatalf("layers %d moe %+v pp %d split %v stage %d: %d dense %d MoE, want %d and %d",
								layers, moe, pp, split, st, dense[st], moeN[st], wd, wm)
						}
					}
				}
			}
		}
	}
}
