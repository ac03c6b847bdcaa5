package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/stepcost/stepcost/estimator/model"
)

// modelFlags are the ways a command names the model: a catalog name, a bare
// parameter count, an architecture given flag by flag, or a model file (a catalog
// name or an architecture object in JSON, the "model" of the API).
type modelFlags struct {
	name, file                            *string
	params                                *float64
	layers, hidden, heads, kvHeads, ffn   *int
	vocab, experts, topK, expertFFN       *int
	moeEvery, shared, firstDense, headDim *int
	gated, tied                           *bool
}

func addModelFlags(fs *flag.FlagSet) *modelFlags {
	return &modelFlags{
		name:       fs.String("model", "", "catalog model (see 'stepcost catalog'), e.g. llama3-70b"),
		file:       fs.String("model-file", "", "JSON file with the model: a catalog name or an architecture object (the API's model)"),
		params:     fs.Float64("params", 0, "a bare parameter count (e.g. 13e9): a standard shape is derived"),
		layers:     fs.Int("layers", 0, "architecture: layers"),
		hidden:     fs.Int("hidden", 0, "architecture: hidden size"),
		heads:      fs.Int("heads", 0, "architecture: attention heads"),
		kvHeads:    fs.Int("kv-heads", 0, "architecture: key/value heads (default: heads)"),
		headDim:    fs.Int("head-dim", 0, "architecture: size of one attention head (default hidden/heads)"),
		ffn:        fs.Int("ffn", 0, "architecture: FFN size (default 4×hidden)"),
		vocab:      fs.Int("vocab", 0, "architecture: vocabulary (default 51200)"),
		gated:      fs.Bool("gated", false, "architecture: gated (SwiGLU) MLP"),
		tied:       fs.Bool("tied", false, "architecture: output layer tied to the embedding"),
		experts:    fs.Int("experts", 0, "architecture, MoE: experts per MoE layer"),
		topK:       fs.Int("top-k", 0, "architecture, MoE: experts each token visits"),
		expertFFN:  fs.Int("expert-ffn", 0, "architecture, MoE: FFN size of one expert (default --ffn)"),
		moeEvery:   fs.Int("moe-every", 0, "architecture, MoE: every k-th layer is an MoE layer (default 1)"),
		shared:     fs.Int("shared-experts", 0, "architecture, MoE: shared experts every token passes through (each of --expert-ffn)"),
		firstDense: fs.Int("first-dense", 0, "architecture, MoE: the first k layers have a dense MLP"),
	}
}

// errNoModel says no way of naming the model was given.
var errNoModel = errors.New("--model, --model-file, --params or --layers/--hidden/--heads: required")

// resolve returns the model the flags name (set: the flags given on the command
// line), what was derived for a bare parameter count, and errNoModel when none was
// given. Giving two ways is an error naming them.
func (m *modelFlags) resolve(set map[string]bool) (a model.Arch, derived string, err error) {
	arch := set["layers"] || set["hidden"] || set["heads"] || set["kv-heads"] || set["head-dim"] || set["ffn"] || set["vocab"] ||
		set["gated"] || set["tied"] || set["experts"] || set["top-k"] || set["expert-ffn"] || set["moe-every"] ||
		set["shared-experts"] || set["first-dense"]
	kinds := 0
	for _, b := range []bool{set["model"], set["model-file"], arch, set["params"]} {
		if b {
			kinds++
		}
	}
	if kinds > 1 {
		return a, "", errors.New("--model, --model-file, --params and --layers/--hidden/--heads: give one way of naming the model")
	}
	switch {
	case set["model"]:
		if a, err = model.Lookup(*m.name); err != nil {
			return a, "", fmt.Errorf("--model: %w", err)
		}
		return a, "", nil
	case set["model-file"]:
		raw, err := os.ReadFile(*m.file)
		if err != nil {
			return a, "", fmt.Errorf("--model-file: %w", err)
		}
		if a, err = decodeModel(raw); err != nil {
			return a, "", fmt.Errorf("--model-file %s: %w", *m.file, err)
		}
		return a, "", nil
	case arch:
		a = model.Arch{Name: "custom", Layers: *m.layers, Hidden: *m.hidden, Heads: *m.heads, KVHeads: *m.kvHeads, FFN: *m.ffn,
			Vocab: *m.vocab, GatedMLP: *m.gated, TiedEmbeddings: *m.tied, HeadSize: *m.headDim}
		if a.FFN == 0 {
			a.FFN = 4 * a.Hidden
		}
		if a.Vocab == 0 {
			a.Vocab = 51200
		}
		if set["experts"] || set["top-k"] || set["expert-ffn"] || set["moe-every"] || set["shared-experts"] || set["first-dense"] {
			a.MoE = &model.MoE{Experts: *m.experts, TopK: *m.topK, ExpertFFN: *m.expertFFN, Frequency: *m.moeEvery,
				SharedExperts: *m.shared, FirstDense: *m.firstDense}
		}
		if err := a.Normalise().Validate(); err != nil {
			return a, "", fmt.Errorf("--layers/--hidden/--heads/--kv-heads/--ffn/--vocab/--experts/--top-k/--expert-ffn/--moe-every/--shared-experts/--first-dense: %w", err)
		}
		return a.Normalise(), "", nil
	case set["params"]:
		if a, derived, err = model.FromParams(*m.params); err != nil {
			return a, "", fmt.Errorf("--params: %w", err)
		}
		return a, derived, nil
	}
	return a, "", errNoModel
}
