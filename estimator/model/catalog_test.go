package model_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/model"
)

func TestLookupAliases(t *testing.T) {
	tests := map[string]string{
		"gpt3-175b":                      "gpt3-175b",
		"GPT3":                           "gpt3-175b",
		"gpt-3":                          "gpt3-175b",
		"GPT-3 175B":                     "gpt3-175b",
		"llama-3-70b":                    "llama3-70b",
		"Llama 3 70B":                    "llama3-70b",
		"llama3_70b":                     "llama3-70b",
		"meta-llama-3.1-405b":            "llama3-405b",
		"meta-llama/Meta-Llama-3.1-405B": "llama3-405b",
		"meta-llama/Meta-Llama-3-8B":     "llama3-8b",
		"Llama 3.1 8B":                   "llama3-8b",
		"meta-llama/Llama-2-70b-hf":      "llama2-70b",
		"llama-2-13b":                    "llama2-13b",
		"gpt-530b":                       "megatron-529.6b",
		"MT-NLG-530B":                    "megatron-529.6b",
		"megatron-1.7b":                  "megatron-1.7b",
		"gpt-145.6b":                     "megatron-145.6b",
		"megatron-1008b":                 "megatron-1t",
		"mistralai/Mixtral-8x7B-v0.1":    "mixtral-8x7b",
		"Mixtral 8x22B":                  "mixtral-8x22b",
		"mosaicml/mpt-30b":               "mpt-30b",
		"  MPT-7B ":                      "mpt-7b",
	}
	for in, want := range tests {
		a, err := model.Lookup(in)
		if err != nil {
			t.Errorf("Lookup(%q): %v", in, err)
			continue
		}
		if a.Name != want {
			t.Errorf("Lookup(%q) = %s, want %s", in, a.Name, want)
		}
	}
}

func TestLookupUnknown(t *testing.T) {
	for _, name := range []string{"", "llama4-400b", "gpt3-175", "mixtral"} {
		_, err := model.Lookup(name)
		if !errors.Is(err, model.ErrNotFound) {
			t.Fatalf("Lookup(%q) error %v does not wrap ErrNotFound", name, err)
		}
		for _, n := range []string{"gpt3-175b", "llama3-405b", "mixtral-8x22b"} {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("Lookup(%q) error does not list %s: %v", name, n, err)
			}
		}
	}
}

func TestCatalogEntries(t *testing.T) {
	names := model.Names()
	want := []string{"deepseek-v3", "gemma2-27b", "gemma2-9b", "gemma3-27b", "gpt3-175b",
		"llama2-13b", "llama2-70b", "llama2-7b", "llama3-405b", "llama3-70b", "llama3-8b", "llama4-maverick", "llama4-scout",
		"megatron-1.7b", "megatron-145.6b", "megatron-18.4b", "megatron-1t", "megatron-3.6b",
		"megatron-310.1b", "megatron-39.1b", "megatron-529.6b", "megatron-7.5b", "megatron-76.1b",
		"mistral-7b", "mixtral-8x22b", "mixtral-8x7b", "mpt-13b", "mpt-30b", "mpt-70b", "mpt-7b", "qwen3-235b-a22b", "qwen3-30b-a3b", "qwen3-32b"}
	if !slices.Equal(names, want) {
		t.Fatalf("Names() = %v\nwant %v", names, want)
	}
	cat := model.Catalog()
	if len(cat) != len(names) {
		t.Fatalf("Catalog has %d entries, Names %d", len(cat), len(names))
	}
	for i, a := range cat {
		if a.Name != names[i] {
			t.Errorf("Catalog()[%d] = %s, want %s (sorted like Names)", i, a.Name, names[i])
		}
		if err := a.Validate(); err != nil {
			t.Errorf("%s: %v", a.Name, err)
		}
		n := a.Normalise()
		if n.KVHeads != a.KVHeads || (a.MoE != nil && *n.MoE != *a.MoE) {
			t.Errorf("%s: catalog entries must spell out every default", a.Name)
		}
		if a.Source == "" {
			t.Errorf("%s: no source", a.Name)
		}
		if l, err := model.Lookup(a.Name); err != nil || l.Name != a.Name {
			t.Errorf("Lookup(%s) = %v, %v", a.Name, l.Name, err)
		}
	}
}

func TestCatalogReturnsCopies(t *testing.T) {
	a := mustLookup(t, "mixtral-8x7b")
	a.MoE.Experts = 99
	a.Layers = 1
	cat := model.Catalog()
	for i := range cat {
		if cat[i].MoE != nil {
			cat[i].MoE.TopK = 7
		}
	}
	names := model.Names()
	first := names[0]
	names[0] = "changed"
	ds := mustLookup(t, "deepseek-v3")
	ds.MLA.VDim = 1
	b := mustLookup(t, "mixtral-8x7b")
	if b.MoE.Experts != 8 || b.MoE.TopK != 2 || b.Layers != 32 || model.Names()[0] != first || mustLookup(t, "deepseek-v3").MLA.VDim != 128 {
		t.Fatalf("catalog was modified through a returned value: %+v %+v", b, *b.MoE)
	}
}

// The architectures of the runs in the project's published-runs calibration set
// (data/published_runs.jsonl: model, layers, hidden, heads, KV heads (0: not
// stated), ffn (0: not stated), vocab as the row gives it, params_b) must come out of
// the catalog.
func TestCatalogReproducesPublishedRuns(t *testing.T) {
	tests := []struct {
		model                                 string // as the row names it
		catalog                               string
		layers, hidden, heads, kv, ffn, vocab int
		paramsB                               float64
	}{
		{"GPT 1.7B (Megatron)", "megatron-1.7b", 24, 2304, 24, 0, 9216, 51200, 1.7},
		{"GPT 3.6B (Megatron)", "megatron-3.6b", 30, 3072, 32, 0, 12288, 51200, 3.6},
		{"GPT 7.5B (Megatron)", "megatron-7.5b", 36, 4096, 32, 0, 16384, 51200, 7.5},
		{"GPT 18.4B (Megatron)", "megatron-18.4b", 40, 6144, 48, 0, 24576, 51200, 18.4},
		{"GPT 39.1B (Megatron)", "megatron-39.1b", 48, 8192, 64, 0, 32768, 51200, 39.1},
		{"GPT 76.1B (Megatron)", "megatron-76.1b", 60, 10240, 80, 0, 40960, 51200, 76.1},
		{"GPT 145.6B (Megatron)", "megatron-145.6b", 80, 12288, 96, 0, 49152, 51200, 145.6},
		{"GPT 310.1B (Megatron)", "megatron-310.1b", 96, 16384, 128, 0, 65536, 51200, 310.1},
		{"GPT 529.6B (Megatron)", "megatron-529.6b", 105, 20480, 128, 0, 81920, 51200, 529.6},
		{"GPT 1008.0B (Megatron)", "megatron-1t", 128, 25600, 160, 0, 102400, 51200, 1008.0},
		{"GPT-3 175B (174.6B)", "gpt3-175b", 96, 12288, 96, 0, 49152, 51200, 174.6},
		{"GPT 530B (529.6B)", "gpt-530b", 105, 20480, 128, 0, 81920, 51200, 529.6},
		{"MPT-70B", "mpt-70b", 80, 8192, 64, 0, 32768, 50368, 64.862},
		// The row (llm-foundry's pretraining yaml) has 56 heads; the released model 64.
		{"MPT-30B", "mpt-30b", 48, 7168, 56, 0, 28672, 50368, 29.975},
		{"MPT-13B", "mpt-13b", 40, 5120, 40, 0, 20480, 50368, 12.854},
		{"MPT-7B", "mpt-7b", 32, 4096, 32, 0, 16384, 50368, 6.659},
		// torchtitan rows give the 128000 base vocabulary; the model has 128256.
		{"Llama 3 8B", "llama3-8b", 32, 4096, 32, 8, 14336, 128000, 8.0},
		{"Llama 3 70B", "llama3-70b", 80, 8192, 64, 8, 28672, 128000, 70.0},
		{"Llama 2 13B", "llama2-13b", 40, 5120, 40, 0, 0, 0, 13.0},
		{"Llama 2 70B", "llama2-70b", 80, 8192, 64, 8, 0, 0, 70.0},
		{"Llama 3.1 405B", "llama3-405b", 126, 16384, 128, 8, 53248, 128000, 405},
		{"Llama 3.1 8B", "llama3-8b", 32, 4096, 32, 8, 14336, 128000, 8},
		{"Llama 3.1 70B", "llama3-70b", 80, 8192, 64, 8, 28672, 128000, 70},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			a := mustLookup(t, tt.catalog)
			if a.Layers != tt.layers || a.Hidden != tt.hidden {
				t.Errorf("%s: %d×%d, row %d×%d", a.Name, a.Layers, a.Hidden, tt.layers, tt.hidden)
			}
			if a.Heads != tt.heads && a.Name != "mpt-30b" {
				t.Errorf("%s: %d heads, row %d", a.Name, a.Heads, tt.heads)
			}
			if tt.kv != 0 && a.KVHeads != tt.kv || tt.kv == 0 && a.Name != "llama2-70b" && a.KVHeads != a.Heads {
				t.Errorf("%s: %d KV heads, row %d", a.Name, a.KVHeads, tt.kv)
			}
			if tt.ffn != 0 && a.FFN != tt.ffn {
				t.Errorf("%s: ffn %d, row %d", a.Name, a.FFN, tt.ffn)
			}
			// Row counts are rounded (70, 8, 405) or use the row's vocabulary.
			if e := relErr(a.Params().Total/1e9, tt.paramsB); e > 0.035 {
				t.Errorf("%s: %.4gB parameters, row %gB", a.Name, a.Params().Total/1e9, tt.paramsB)
			}
			// With the row's own vocabulary the count is within 1 % (0.5 % for the
			// exact MosaicML figures).
			if tt.vocab != 0 {
				b := a
				b.Vocab = tt.vocab
				if e := relErr(b.Params().Total/1e9, tt.paramsB); e > 0.035 || strings.HasPrefix(a.Name, "mpt") && e > 0.005 {
					t.Errorf("%s with vocab %d: %.5gB parameters, row %gB", a.Name, tt.vocab, b.Params().Total/1e9, tt.paramsB)
				}
			}
		})
	}
}
