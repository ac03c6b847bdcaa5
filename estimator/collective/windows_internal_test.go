package collective

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/topology"
)

// windowsByExtension is the direct reading of the window sums: from every first
// stage, extend the window one stage at a time, adding each stage's loads to its
// links and keeping the most loaded.
func windowsByExtension(stages []stageLoads, acc []float64) [][]winSum {
	D := len(stages)
	W := make([][]winSum, D)
	for lo := range D {
		W[lo] = make([]winSum, D)
		var cur winSum
		var touched []int32
		for hi := lo; hi < D; hi++ {
			st := stages[hi]
			for i, r := range st.res {
				if acc[r] == 0 {
					touched = append(touched, r)
				}
				acc[r] += st.w[i]
				cur.m = max(cur.m, acc[r])
			}
			cur.lat = max(cur.lat, st.lat)
			cur.net = max(cur.net, b2f(st.net))
			W[lo][hi] = cur
		}
		for _, r := range touched {
			acc[r] = 0
		}
	}
	return W
}

// The window sums built from each link's runs of stages are bit for bit those of
// extending every window a stage at a time, for stages whose links recur
// irregularly with loads that round differently in every order, and the scratch
// arrays come back all zeros.
func TestWindowsMatchExtension(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 5))
	var sc winScratch
	for trial := range 300 {
		links := 1 + rng.IntN(60)
		D := 1 + rng.IntN(40)
		stages := make([]stageLoads, D)
		for s := range stages {
			st := &stages[s]
			st.lat = rng.Float64() * 10
			st.net = rng.IntN(3) == 0
			for r := range links {
				if rng.IntN(4) == 0 {
					st.res = append(st.res, int32(r))
					st.w = append(st.w, rng.Float64()/float64(1+rng.IntN(1000)))
				}
			}
			rng.Shuffle(len(st.res), func(i, j int) {
				st.res[i], st.res[j] = st.res[j], st.res[i]
				st.w[i], st.w[j] = st.w[j], st.w[i]
			})
		}
		acc := make([]float64, links)
		want := windowsByExtension(stages, acc)
		got := windows(stages, acc, &sc)
		for lo := range D {
			for hi := lo; hi < D; hi++ {
				if got[lo][hi] != want[lo][hi] {
					t.Fatalf("trial %d: window %d…%d = %+v, by extension %+v", trial, lo, hi, got[lo][hi], want[lo][hi])
				}
			}
		}
		for r, v := range acc {
			if v != 0 {
				t.Fatalf("trial %d: scratch link %d left at %v", trial, r, v)
			}
		}
	}
}

// treePipeAlone builds one pipeline of trees trees (1 or 2) by placing all of its
// flows stage by stage, as the tree and the double tree were built each on its own.
func treePipeAlone(p *Placement, l *loads, nch, trees int) pipe {
	n := p.N()
	if n < 2 {
		return pipe{}
	}
	type flowAt struct {
		src, dst int32
		w        float64
	}
	var stageFlows [][]flowAt
	at := func(s int, f flowAt) {
		for len(stageFlows) <= s {
			stageFlows = append(stageFlows, nil)
		}
		stageFlows[s] = append(stageFlows[s], f)
	}
	isMesh := p.Cluster.Spec.Intra.Kind == topology.Mesh
	period := channelPeriod(p.Shape, isMesh, nch)
	for ch := range period {
		w := float64(channelsLike(ch, period, nch))
		for t := range trees {
			parent := channelTree(p.Shape, t, ch, isMesh)
			height, depth, H, maxD := treeLevels(parent)
			if H+maxD > maxPipeDepth {
				return pipe{}
			}
			for r, pr := range parent {
				if pr < 0 {
					continue
				}
				at(height[r], flowAt{int32(r), pr, w})
				at(H+depth[pr], flowAt{pr, int32(r), w})
			}
		}
	}
	loaded := p.placed()
	var stages []stageLoads
	for _, fs := range stageFlows {
		for _, g := range loaded {
			for _, f := range fs {
				l.flow(g[f.src], g[f.dst], f.w)
			}
		}
		stages = append(stages, l.takeStage())
	}
	return buildPipe(stages, l)
}

// The tree and the double tree built together, the first tree's flows placed once
// for both, are bit for bit those built each from all of its own flows, on every
// system of the catalogue, for groups of one to eight GPUs per node over one to a
// hundred nodes, alone and with their concurrent groups.
func TestTreePipesMatchAlone(t *testing.T) {
	n := 0
	for _, spec := range catalog.Systems() {
		for _, nodes := range []int{1, 2, 3, 5, 8, 16, 33, 100} {
			spec.Nodes = nodes
			c, err := spec.Build()
			if err != nil {
				t.Fatal(err)
			}
			system := spec.Name
			for _, per := range []int{1, 2, 8} {
				for _, conc := range []bool{false, true} {
					g, sib, err := NodeGroups(c, nodes, per, conc)
					if err != nil {
						continue
					}
					p, err := Place(c, g, sib)
					if err != nil {
						t.Fatal(err)
					}
					l := getLoads(c)
					nch := p.coef.channels
					tree, dtree := treePipes(p, l, nch)
					wantTree, wantDTree := treePipeAlone(p, l, nch, 1), treePipeAlone(p, l, nch, 2)
					putLoads(l)
					name := fmt.Sprintf("%s/%d nodes/%d per node/concurrent %v", system, nodes, per, conc)
					if !reflect.DeepEqual(tree, wantTree) {
						t.Errorf("%s: tree %+v, alone %+v", name, tree, wantTree)
					}
					if !reflect.DeepEqual(dtree, wantDTree) {
						t.Errorf("%s: double tree %+v, alone %+v", name, dtree, wantDTree)
					}
					if dtree.ok && nodes > 1 {
						n++
					}
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no double tree across nodes compared")
	}
}
