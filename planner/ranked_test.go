package planner_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

var updateRanked = flag.Bool("update-ranked", false, "rewrite testdata/ranked.sha256 from this tree's searches")

// rankedSearches are the searches whose ranked answers are pinned: the benchmark
// grid, MoE models in fp8, every objective, a range of job sizes, dominated plans
// kept and a partly busy cluster.
func rankedSearches(t testing.TB) []struct {
	name string
	req  planner.Request
	slow bool // skipped under the race detector
} {
	type search = struct {
		name string
		req  planner.Request
		slow bool
	}
	h100 := func(model string, gpus, seq, gbs int) planner.Request {
		return planner.Request{Model: mustModel(t, model), Cluster: mustCluster(t, "dgx-h100", gpus/8), GPUs: gpus, TopK: 20,
			Training: step.Training{SeqLen: seq, GlobalBatch: gbs}}
	}
	var out []search
	for _, g := range []struct {
		model         string
		gpus, seq, gb int
		slow          bool
	}{
		{"llama3-8b", 8, 8192, 64, false},
		{"llama3-8b", 64, 8192, 256, false},
		{"llama3-70b", 256, 8192, 512, false},
		{"gpt3-175b", 1024, 2048, 1536, false},
		{"llama3-405b", 4096, 8192, 2048, false},
		{"gpt3-175b", 16384, 2048, 16384, true},
		{"llama3-70b", 16384, 8192, 16384, true},
		{"llama3-70b", 100000, 8192, 100000, true},
	} {
		out = append(out, search{fmt.Sprintf("%s/%d", g.model, g.gpus), h100(g.model, g.gpus, g.seq, g.gb), g.slow})
	}
	r := h100("llama3-70b", 256, 8192, 512)
	r.Objective = planner.Throughput
	out = append(out, search{"llama3-70b/256/throughput", r, false})
	r = h100("gpt3-175b", 1024, 2048, 1536)
	r.IncludeDominated = true
	out = append(out, search{"gpt3-175b/1024/dominated", r, false})
	r = h100("llama3-70b", 512, 8192, 1024)
	r.GPUs, r.MinGPUs, r.MaxGPUs = 0, 128, 512
	r.Objective, r.PricePerGPUHour, r.TokenBudget = planner.Cost, 2.5, 1e12
	out = append(out, search{"llama3-70b/128-512/cost", r, false})
	r = h100("llama3-70b", 256, 8192, 512)
	r.Cluster = mustCluster(t, "dgx-h100", 34)
	r.ExcludeNodes = []int{3, 7}
	out = append(out, search{"llama3-70b/256/excluded", r, false})
	r = h100("qwen3-30b-a3b", 64, 4096, 512)
	r.Training.Precision = step.FP8
	out = append(out, search{"qwen3-30b-a3b/64/fp8", r, false})
	r = h100("qwen3-235b-a22b", 256, 4096, 1024)
	out = append(out, search{"qwen3-235b-a22b/256", r, true})
	r = planner.Request{Model: mustModel(t, "deepseek-v3"), Cluster: mustCluster(t, "hgx-h800", 256), GPUs: 2048, TopK: 20,
		Training: step.Training{SeqLen: 4096, GlobalBatch: 15360, Precision: step.FP8}}
	out = append(out, search{"deepseek-v3/2048/fp8", r, true})
	r = h100("llama3-405b", 16384, 8192, 2048)
	out = append(out, search{"llama3-405b/16384", r, true})
	return out
}

// TestRankedAnswersUnchanged pins the ranked answer of each search — the top plans
// in order and the Pareto front, every layout, placement and estimate, bit for bit
// (JSON writes each float64 so that it reads back to the same bits) — to its SHA-256
// in testdata/ranked.sha256, written by the search before the speed work of
// docs/planner.md "Speed". Work that only makes the search faster must leave every
// answer as it was; a change of the step model's prices changes them, and then the
// file is rewritten with -update-ranked (see testdata/README.md).
func TestRankedAnswersUnchanged(t *testing.T) {
	path := filepath.Join("testdata", "ranked.sha256")
	want := map[string]string{}
	if !*updateRanked {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if name, sum, ok := strings.Cut(sc.Text(), " "); ok && !strings.HasPrefix(name, "#") {
				want[name] = sum
			}
		}
		f.Close()
	}
	var lines []string
	for _, s := range rankedSearches(t) {
		if s.slow && (raceEnabled || testing.Short()) {
			continue
		}
		res, err := planner.Search(context.Background(), step.New(), s.req)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		b, err := json.Marshal(struct {
			Top, Pareto []planner.Plan
			NoPlan      string
		}{res.Top, res.Pareto, res.NoPlan})
		if err != nil {
			t.Fatal(err)
		}
		if dir := os.Getenv("STEPCOST_RANKED_DUMP"); dir != "" {
			if err := os.WriteFile(filepath.Join(dir, strings.ReplaceAll(s.name, "/", "_")+".json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		sum := sha256.Sum256(b)
		got := hex.EncodeToString(sum[:])
		lines = append(lines, s.name+" "+got)
		if *updateRanked {
			continue
		}
		switch w, ok := want[s.name]; {
		case !ok:
			t.Errorf("%s: no pinned answer in %s", s.name, path)
		case w != got:
			t.Errorf("%s: ranked answer changed (sha256 %s, pinned %s; %d plans, best %.6f s)", s.name, got, w, len(res.Top), res.Top[0].Score)
		}
	}
	if *updateRanked {
		if raceEnabled || testing.Short() {
			t.Fatal("-update-ranked needs every search: run it without -race and -short")
		}
		head := "# name sha256(JSON of the top 20 plans and the Pareto front); TestRankedAnswersUnchanged\n"
		if err := os.WriteFile(path, []byte(head+strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTopKIsExhaustive: the top K of a pinned search is the first K of a search
// that keeps far more (K = 1000), priced over one worker and over four: the plans
// the search prunes by their bound, and the order it prices them in, take no plan
// out of the top K and put none in. A plan pushed past position K comes back when a
// later plan dominates one ranked before it (qwen3-235b-a22b on 256 H100 once
// missed its 20th plan, TP 4 × PP 4 × CP 2 at 8.141 s, this way).
func TestTopKIsExhaustive(t *testing.T) {
	e := step.New()
	for _, s := range rankedSearches(t) {
		if s.slow && s.name != "qwen3-235b-a22b/256" || (s.slow && (raceEnabled || testing.Short())) {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			k := s.req.TopK
			all := s.req
			all.TopK = 1000
			wide, err := planner.Search(context.Background(), e, all)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(wide.Top[:min(k, len(wide.Top))])
			if err != nil {
				t.Fatal(err)
			}
			for _, workers := range []int{1, 4} {
				req := s.req
				req.Workers = workers
				res, err := planner.Search(context.Background(), e, req)
				if err != nil {
					t.Fatal(err)
				}
				got, err := json.Marshal(res.Top)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != string(want) {
					for i := range max(len(res.Top), min(k, len(wide.Top))) {
						var g, w string
						if i < len(res.Top) {
							g = fmt.Sprintf("%+v %.4f", res.Top[i].Layout, res.Top[i].Score)
						}
						if i < len(wide.Top) {
							w = fmt.Sprintf("%+v %.4f", wide.Top[i].Layout, wide.Top[i].Score)
						}
						if g != w {
							t.Errorf("%d workers, place %d: %s; with K = 1000: %s", workers, i+1, g, w)
						}
					}
					t.Errorf("%d workers: the top %d differ from the first %d with K = 1000", workers, k, k)
				}
			}
		})
	}
}
