package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// ErrNotFound is wrapped by the error Lookup returns for a name that is not in the
// catalog.
var ErrNotFound = errors.New("model: not found")

// Lookup returns the catalog architecture called name: a canonical name (see Names)
// or an alias ("gpt3", "llama-3-70b", "meta-llama/Meta-Llama-3.1-405B",
// "mixtral-8x7b-v0.1", "gpt-530b", …). Matching ignores case, spaces, hyphens and
// underscores, and a Hugging Face organisation prefix ("meta-llama/"). The result is
// a copy. An unknown name gives an error that wraps ErrNotFound and lists the
// canonical names.
func Lookup(name string) (Arch, error) {
	cat := catalog()
	i, ok := cat.index[lookupKey(name)]
	if !ok {
		return Arch{}, &notFoundError{name: name, known: cat.names}
	}
	return cloneArch(cat.entries[i].arch), nil
}

// Names returns the canonical catalog names, sorted.
func Names() []string { return slices.Clone(catalog().names) }

// Catalog returns a copy of every catalog architecture, sorted by name.
func Catalog() []Arch {
	cat := catalog()
	out := make([]Arch, len(cat.entries))
	for i, e := range cat.entries {
		out[i] = cloneArch(e.arch)
	}
	return out
}

type notFoundError struct {
	name  string
	known []string
}

func (e *notFoundError) Error() string {
	// No "model:" prefix: the caller's flag or field comes first
	// ("model.name: unknown model …"), and "model" said it again.
	return fmt.Sprintf("unknown model %q; known: %s", e.name, strings.Join(e.known, ", "))
}

func (e *notFoundError) Is(target error) bool { return target == ErrNotFound }

func cloneArch(a Arch) Arch {
	if a.MoE != nil {
		m := *a.MoE
		a.MoE = &m
	}
	if a.MLA != nil {
		m := *a.MLA
		a.MLA = &m
	}
	return a
}

// lookupKey normalises a name: the part after the last '/', lower case, without
// spaces, hyphens and underscores ("Llama-3 70B" and "llama3_70b" → "llama370b").
func lookupKey(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '-', '_', '\t':
			return -1
		}
		return r
	}, strings.ToLower(strings.TrimSpace(name)))
}

type entry struct {
	arch    Arch
	aliases []string
}

type table struct {
	entries []entry        // sorted by name
	names   []string       // canonical names, sorted
	index   map[string]int // lookupKey of names and aliases → entries index
}

// catalog builds the table once; it is never modified afterwards.
var catalog = sync.OnceValue(func() table {
	es := entries()
	slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.arch.Name, b.arch.Name) })
	t := table{entries: es, index: make(map[string]int)}
	for i, e := range es {
		t.names = append(t.names, e.arch.Name)
		for _, n := range append([]string{e.arch.Name}, e.aliases...) {
			if _, dup := t.index[lookupKey(n)]; !dup { // duplicates are caught by the tests
				t.index[lookupKey(n)] = i
			}
		}
	}
	return t
})

// Sources of the catalog numbers.
const (
	srcGPT3 = "Brown et al. 2020, Language Models are Few-Shot Learners (arXiv:2005.14165) Table 2.1: " +
		"96 layers, d_model 12288, 96 heads of 128, ffn 4·d_model, tied embeddings; the 50257-token " +
		"GPT-2 vocabulary padded to 51200 as in Megatron-LM, 174.6B parameters (Narayanan et al. 2021 Table 2)"
	srcMegatron = "Narayanan et al. SC'21, Efficient Large-Scale Language Model Training on GPU Clusters " +
		"Using Megatron-LM (arXiv:2104.04473) Table 1: layers, hidden, heads; ffn 4h, vocab 51200, tied " +
		"embeddings as in the paper's parameter formula (eq. 2)"
	srcLlama2 = "Touvron et al. 2023, Llama 2 (arXiv:2307.09288) and the meta-llama/Llama-2-%s-hf " +
		"config.json: vocab 32000, SwiGLU MLP, RMSNorm, untied output"
	srcLlama3 = "The meta-llama/Meta-Llama-3.1-%s config.json: layers, hidden, heads, FFN, vocab " +
		"128256, 8 KV heads, SwiGLU MLP, untied " +
		"output (Llama 3 and 3.1 share the architecture)"
	srcMPTCard = "MosaicML model card mosaicml/mpt-%s (config.json): d_model, n_heads, n_layers, " +
		"vocab 50432, expansion ratio 4 (GELU), no biases, tied embeddings"
	srcMPTFoundry = "mosaicml/llm-foundry scripts/train/yamls/pretrain/mpt-%s.yaml (no released model): " +
		"d_model, n_heads, n_layers, vocab 50368, expansion ratio 4, no biases, tied embeddings"
	srcMixtral = "Jiang et al. 2024, Mixtral of Experts (arXiv:2401.04088) and the " +
		"mistralai/Mixtral-%s-v0.1 config.json: 8 experts, top-2, every layer MoE, SwiGLU experts, " +
		"8 KV heads, untied output"
	srcQwen3 = "Qwen3 technical report (Yang et al. 2025, arXiv:2505.09388) and the Qwen/Qwen3-%s config.json: " +
		"hidden_size %d, %d layers, %d heads of head_dim 128, %d KV heads, vocab_size 151936, untied; %s; " +
		"published as %s parameters"
	srcDeepSeekV3 = "DeepSeek-AI 2024, DeepSeek-V3 Technical Report (arXiv:2412.19437) §4.2 and the " +
		"deepseek-ai/DeepSeek-V3 config.json: 61 layers, hidden 7168, 128 heads, MLA (q_lora_rank 1536, " +
		"kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128), first 3 layers dense " +
		"(intermediate 18432), then 256 routed experts (2048) top-8 from 4 of 8 groups (n_group 8, topk_group 4) " +
		"and 1 shared expert, vocab 129280, untied; " +
		"671B total / 37B active; one multi-token-prediction module (num_nextn_predict_layers 1, 14B, not in the total)"
	srcGemma2 = "Gemma Team 2024, Gemma 2: Improving Open Language Models at a Practical Size (arXiv:2408.00118) " +
		"Tables 1–2 and the google/gemma-2-%s config.json: hidden_size %d, %d layers, %d heads of head_dim %d, %d KV heads, " +
		"intermediate_size %d (GeGLU), vocab_size 256000, tied embeddings, local sliding-window attention (4096 tokens) " +
		"in every other layer; published as %s embedding + %s non-embedding parameters"
	srcGemma3 = "Gemma Team 2025, Gemma 3 Technical Report (arXiv:2503.19786) Table 1 and the google/gemma-3-27b-pt " +
		"config.json (text_config): hidden_size 5376, 62 layers, 32 heads of head_dim 128, 16 KV heads, intermediate_size " +
		"21504 (GeGLU), vocab_size 262208, tied embeddings, five local layers (sliding window 1024) for every global one; " +
		"published as 1,416M embedding + 25,600M non-embedding parameters (the 417M vision encoder not modelled)"
	srcMistral = "Jiang et al. 2023, Mistral 7B (arXiv:2310.06825) Table 1: dim 4096, 32 layers, 32 heads of head_dim 128, " +
		"8 KV heads, hidden_dim 14336, vocab_size 32000, sliding window 4096 in every layer; published as 7.3B parameters"
	srcLlama4 = "Meta Llama 4 model card and the meta-llama/Llama-4-%s config.json (text_config): " +
		"hidden_size 5120, 40 heads, 8 KV heads, 48 layers, vocab_size 202048, intermediate_size 8192 per expert, " +
		"intermediate_size_mlp 16384 for dense layers, one shared expert per MoE layer, %s; " +
		"published as %s total / 17B active parameters"
)

func entries() []entry {
	gpt := func(name string, layers, hidden, heads int, src string, aliases ...string) entry {
		return entry{arch: Arch{
			Name: name, Layers: layers, Hidden: hidden, Heads: heads, KVHeads: heads,
			FFN: 4 * hidden, Vocab: 51200, TiedEmbeddings: true, Source: src,
		}, aliases: aliases}
	}
	megatron := func(size string, layers, hidden, heads int, aliases ...string) entry {
		return gpt("megatron-"+size, layers, hidden, heads, srcMegatron,
			append([]string{"megatron-gpt-" + size, "gpt-" + size}, aliases...)...)
	}
	llama := func(name string, layers, hidden, heads, kv, ffn, vocab int, src string, aliases ...string) entry {
		return entry{arch: Arch{
			Name: name, Layers: layers, Hidden: hidden, Heads: heads, KVHeads: kv, FFN: ffn,
			GatedMLP: true, Vocab: vocab, Source: src,
		}, aliases: aliases}
	}
	llama2 := func(size string, layers, hidden, heads, kv, ffn int) entry {
		return llama("llama2-"+size, layers, hidden, heads, kv, ffn, 32000,
			fmt.Sprintf(srcLlama2, size), "llama2-"+size+"-hf", "meta-llama-2-"+size)
	}
	llama3 := func(size string, layers, hidden, heads, ffn int) entry {
		return llama("llama3-"+size, layers, hidden, heads, 8, ffn, 128256,
			fmt.Sprintf(srcLlama3, strings.ToUpper(size)),
			"meta-llama-3-"+size, "llama3.1-"+size, "meta-llama-3.1-"+size)
	}
	mpt := func(size string, layers, hidden, heads, vocab int, src string) entry {
		return entry{arch: Arch{
			Name: "mpt-" + size, Layers: layers, Hidden: hidden, Heads: heads, KVHeads: heads,
			FFN: 4 * hidden, Vocab: vocab, TiedEmbeddings: true, Source: fmt.Sprintf(src, size),
		}, aliases: []string{"mosaicml-mpt-" + size}}
	}
	mixtral := func(size string, layers, hidden, heads, ffn, vocab int, note string) entry {
		return entry{arch: Arch{
			Name: "mixtral-" + size, Layers: layers, Hidden: hidden, Heads: heads, KVHeads: 8,
			FFN: ffn, GatedMLP: true, Vocab: vocab,
			MoE:    &MoE{Experts: 8, TopK: 2, ExpertFFN: ffn, Frequency: 1},
			Source: fmt.Sprintf(srcMixtral, strings.TrimSuffix(size, "b")+"B") + note,
		}, aliases: []string{"mixtral-" + size + "-v0.1"}}
	}
	llama4 := func(name, repo string, experts, every int, moeNote, total string) entry {
		return entry{arch: Arch{
			Name: name, Layers: 48, Hidden: 5120, Heads: 40, KVHeads: 8, FFN: 16384, GatedMLP: true, Vocab: 202048,
			MoE:    &MoE{Experts: experts, TopK: 1, ExpertFFN: 8192, Frequency: every, SharedExperts: 1},
			Source: fmt.Sprintf(srcLlama4, repo, moeNote, total),
		}, aliases: []string{name + "-" + strings.ToLower(strings.TrimPrefix(repo, strings.SplitN(repo, "-", 2)[0]+"-"))}}
	}
	qwen3 := func(size string, layers, hidden, heads, kv, ffn int, moe *MoE, mlp, total string) entry {
		return entry{arch: Arch{
			Name: "qwen3-" + strings.ToLower(size), Layers: layers, Hidden: hidden, Heads: heads, KVHeads: kv, HeadSize: 128,
			FFN: ffn, GatedMLP: true, Vocab: 151936, MoE: moe,
			Source: fmt.Sprintf(srcQwen3, size, hidden, layers, heads, kv, mlp, total),
		}}
	}
	return []entry{
		gpt("gpt3-175b", 96, 12288, 96, srcGPT3, "gpt3", "gpt-175b", "gpt3-174.6b"),

		megatron("1.7b", 24, 2304, 24),
		megatron("3.6b", 30, 3072, 32),
		megatron("7.5b", 36, 4096, 32),
		megatron("18.4b", 40, 6144, 48),
		megatron("39.1b", 48, 8192, 64),
		megatron("76.1b", 60, 10240, 80),
		megatron("145.6b", 80, 12288, 96),
		megatron("310.1b", 96, 16384, 128),
		// Same shape as Megatron-Turing NLG 530B (Smith et al. 2022).
		megatron("529.6b", 105, 20480, 128, "gpt-530b", "megatron-530b", "mt-nlg-530b", "megatron-turing-nlg-530b"),
		megatron("1t", 128, 25600, 160, "megatron-1008b", "megatron-1008.0b", "gpt-1008b"),

		llama2("7b", 32, 4096, 32, 32, 11008),
		llama2("13b", 40, 5120, 40, 40, 13824),
		llama2("70b", 80, 8192, 64, 8, 28672),

		llama3("8b", 32, 4096, 32, 14336),
		llama3("70b", 80, 8192, 64, 28672),
		llama3("405b", 126, 16384, 128, 53248),

		mpt("7b", 32, 4096, 32, 50432, srcMPTCard),
		mpt("13b", 40, 5120, 40, 50368, srcMPTFoundry),
		// The model card has 64 heads; llm-foundry's pretraining yaml (used by its
		// benchmark table) has 56. Heads change neither parameters nor FLOPs.
		mpt("30b", 48, 7168, 64, 50432, srcMPTCard),
		mpt("70b", 80, 8192, 64, 50368, srcMPTFoundry),

		mixtral("8x7b", 32, 4096, 32, 14336, 32000, ""),
		{arch: Arch{
			Name: "deepseek-v3", Layers: 61, Hidden: 7168, Heads: 128, KVHeads: 128, FFN: 18432, GatedMLP: true, Vocab: 129280, MTPLayers: 1,
			MLA:    &MLA{QLoRARank: 1536, KVLoRARank: 512, QKNopeDim: 128, QKRopeDim: 64, VDim: 128},
			MoE:    &MoE{Experts: 256, TopK: 8, ExpertFFN: 2048, Frequency: 1, SharedExperts: 1, FirstDense: 3, Groups: 8, TopKGroups: 4},
			Source: srcDeepSeekV3,
		}, aliases: []string{"deepseek-v3-671b", "deepseek-ai/deepseek-v3-base"}},
		qwen3("32B", 64, 5120, 64, 8, 25600, nil, "intermediate_size 25600", "32.8B"),
		qwen3("30B-A3B", 48, 2048, 32, 4, 6144, &MoE{Experts: 128, TopK: 8, ExpertFFN: 768, Frequency: 1},
			"128 experts (moe_intermediate_size 768), top-8 in every layer, no shared expert", "30.5B total / 3.3B active"),
		qwen3("235B-A22B", 94, 4096, 64, 4, 12288, &MoE{Experts: 128, TopK: 8, ExpertFFN: 1536, Frequency: 1},
			"128 experts (moe_intermediate_size 1536), top-8 in every layer, no shared expert", "235B total / 22B active"),
		llama4("llama4-scout", "Scout-17B-16E", 16, 1, "16 routed experts top-1 in every layer", "109B"),
		llama4("llama4-maverick", "Maverick-17B-128E", 128, 2,
			"128 routed experts top-1 in every second layer (interleave_moe_layer_step 2), dense MLPs between", "400B"),
		{arch: Arch{
			Name: "gemma2-9b", Layers: 42, Hidden: 3584, Heads: 16, KVHeads: 8, HeadSize: 256, FFN: 14336, GatedMLP: true,
			Vocab: 256000, TiedEmbeddings: true, SlidingWindow: 4096, GlobalEvery: 2,
			Source: fmt.Sprintf(srcGemma2, "9b", 3584, 42, 16, 256, 8, 14336, "917.5M", "8,324.2M"),
		}, aliases: []string{"google-gemma-2-9b"}},
		{arch: Arch{
			Name: "gemma2-27b", Layers: 46, Hidden: 4608, Heads: 32, KVHeads: 16, HeadSize: 128, FFN: 36864, GatedMLP: true,
			Vocab: 256000, TiedEmbeddings: true, SlidingWindow: 4096, GlobalEvery: 2,
			Source: fmt.Sprintf(srcGemma2, "27b", 4608, 46, 32, 128, 16, 36864, "1,179.6M", "26,047.5M"),
		}, aliases: []string{"google-gemma-2-27b"}},
		{arch: Arch{
			Name: "gemma3-27b", Layers: 62, Hidden: 5376, Heads: 32, KVHeads: 16, HeadSize: 128, FFN: 21504, GatedMLP: true,
			Vocab: 262208, TiedEmbeddings: true, SlidingWindow: 1024, GlobalEvery: 6, Source: srcGemma3,
		}, aliases: []string{"google-gemma-3-27b"}},
		{arch: Arch{
			Name: "mistral-7b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, FFN: 14336, GatedMLP: true,
			Vocab: 32000, SlidingWindow: 4096, Source: srcMistral,
		}, aliases: []string{"mistral-7b-v0.1"}},
		mixtral("8x22b", 56, 6144, 48, 16384, 32000,
			" (vocab 32000 as in the base model's config; the v0.3 tokenizer of the instruct model has 32768)"),
	}
}
