package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/spf13/pflag"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/internal/jsonreq"
	"github.com/stepcost/stepcost/internal/strictjson"
	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// modelFlags are the ways a command names the model: a catalog name, a bare
// parameter count, an architecture given flag by flag, or a model file (a catalog
// name, the API's "model" object or an architecture object, in JSON).
type modelFlags struct {
	name, file                            *string
	params                                *float64
	layers, hidden, heads, kvHeads, ffn   *int
	vocab, experts, topK, expertFFN       *int
	moeEvery, shared, firstDense, headDim *int
	window, globalEvery                   *int
	mtp, groups, topKGroups               *int
	qLoRA, kvLoRA, qkNope, qkRope, vHead  *int
	gated, tied, gluClamp, expertBias     *bool
	// fileSpec is the model file's when it is the API's model object.
	fileSpec *pb.ModelSpec
}

// source is the catalog name or the parameter count the model was given by
// (--model, --params, or a model file that is the API's {"name": …} or
// {"params": …}), as a request sends it; "" and 0 otherwise. Call it after
// resolve.
func (m *modelFlags) source(set map[string]bool) (name string, params float64) {
	switch {
	case set["model"]:
		return *m.name, 0
	case set["params"]:
		return "", *m.params
	case set["model-file"]:
		return m.fileSpec.GetName(), m.fileSpec.GetParams()
	}
	return "", 0
}

func addModelFlags(fs *pflag.FlagSet) *modelFlags {
	return &modelFlags{
		name:        fs.String("model", "", "catalog model (see 'stepcost catalog'), e.g. llama3-70b"),
		file:        fs.String("model-file", "", "JSON file with the model: the API's model object ({\"name\": …}, {\"architecture\": {…}} or {\"params\": …}), a catalog name, or an architecture's fields"),
		params:      fs.Float64("params", 0, "a bare parameter count (e.g. 13e9): a standard shape is derived"),
		layers:      fs.Int("layers", 0, "architecture: layers"),
		hidden:      fs.Int("hidden", 0, "architecture: hidden size"),
		heads:       fs.Int("heads", 0, "architecture: attention heads"),
		kvHeads:     fs.Int("kv-heads", 0, "architecture: key/value heads (default: heads)"),
		headDim:     fs.Int("head-dim", 0, "architecture: size of one attention head (default hidden/heads)"),
		ffn:         fs.Int("ffn", 0, "architecture: FFN size (default 4×hidden)"),
		vocab:       fs.Int("vocab", 0, "architecture: vocabulary (default 51200)"),
		gated:       fs.Bool("gated", false, "architecture: gated (SwiGLU) MLP"),
		gluClamp:    fs.Bool("glu-clamp", false, "architecture: the gated MLP clamps its inputs before the activation (gpt-oss's SwiGLU limit); needs --gated"),
		tied:        fs.Bool("tied", false, "architecture: output layer tied to the embedding"),
		experts:     fs.Int("experts", 0, "architecture, MoE: experts per MoE layer"),
		topK:        fs.Int("top-k", 0, "architecture, MoE: experts each token visits"),
		expertFFN:   fs.Int("expert-ffn", 0, "architecture, MoE: FFN size of one expert (default --ffn)"),
		moeEvery:    fs.Int("moe-every", 0, "architecture, MoE: every k-th layer is an MoE layer (default 1)"),
		shared:      fs.Int("shared-experts", 0, "architecture, MoE: shared experts every token passes through (each of --expert-ffn)"),
		firstDense:  fs.Int("first-dense", 0, "architecture, MoE: the first k layers have a dense MLP"),
		expertBias:  fs.Bool("expert-bias", false, "architecture, MoE: the routed experts' linear layers carry biases (gpt-oss)"),
		groups:      fs.Int("moe-groups", 0, "architecture, MoE: group-limited routing, the experts form this many groups (DeepSeek-V3's n_group 8; 0: no limit)"),
		topKGroups:  fs.Int("moe-topk-groups", 0, "architecture, MoE: with --moe-groups, a token's experts come from this many groups, so it reaches at most this many nodes (DeepSeek-V3's topk_group 4)"),
		mtp:         fs.Int("mtp-layers", 0, "architecture: multi-token-prediction depth, one more layer and output pass each on the last stage (DeepSeek-V3: 1)"),
		window:      fs.Int("sliding-window", 0, "architecture: tokens a query attends to in local-attention layers (0: whole sequence)"),
		globalEvery: fs.Int("global-every", 0, "architecture: every n-th layer attends globally, the others through --sliding-window"),
		qLoRA:       fs.Int("q-lora-rank", 0, "architecture, MLA: query latent rank (0: queries projected directly)"),
		kvLoRA:      fs.Int("kv-lora-rank", 0, "architecture, MLA: key/value latent rank (turns multi-head latent attention on)"),
		qkNope:      fs.Int("qk-nope-dim", 0, "architecture, MLA: per-head query/key size without rotary position"),
		qkRope:      fs.Int("qk-rope-dim", 0, "architecture, MLA: per-head rotary query/key size"),
		vHead:       fs.Int("v-head-dim", 0, "architecture, MLA: per-head value size"),
	}
}

// archFlagNames are the flags describing an architecture flag by flag, in --help's
// order.
var archFlagNames = []string{"layers", "hidden", "heads", "kv-heads", "head-dim", "ffn", "vocab", "gated", "glu-clamp", "tied",
	"experts", "top-k", "expert-ffn", "moe-every", "shared-experts", "first-dense", "expert-bias", "moe-groups", "moe-topk-groups",
	"mtp-layers", "sliding-window", "global-every", "q-lora-rank", "kv-lora-rank", "qk-nope-dim", "qk-rope-dim", "v-head-dim"}

// errNoModel says no way of naming the model was given.
var errNoModel = errors.New("--model, --model-file, --params or --layers/--hidden/--heads: required")

// resolve returns the model the flags name (set: the flags given on the command
// line), what was derived for a bare parameter count, and errNoModel when none was
// given. Giving two ways is an error naming them.
func (m *modelFlags) resolve(set map[string]bool) (a model.Arch, derived string, err error) {
	var archGiven []string
	for _, n := range archFlagNames {
		if set[n] {
			archGiven = append(archGiven, "--"+n)
		}
	}
	arch := len(archGiven) > 0
	var ways []string
	for _, n := range []string{"model", "model-file", "params"} {
		if set[n] {
			ways = append(ways, "--"+n)
		}
	}
	if arch {
		ways = append(ways, strings.Join(archGiven, ", "))
	}
	if len(ways) > 1 {
		// The flags given, named: an architecture flag beside --model reads as
		// changing the catalog model, which it does not.
		return a, "", fmt.Errorf("%s and %s: give one way of naming the model (--model, --model-file, --params, or the architecture flag by flag)",
			strings.Join(ways[:len(ways)-1], ", "), ways[len(ways)-1])
	}
	switch {
	case set["model"]:
		if a, err = model.Lookup(*m.name); err != nil {
			return a, "", fmt.Errorf("--model: %w", err)
		}
		return a, "", nil
	case set["model-file"]:
		raw, err := readFile(*m.file)
		if err != nil {
			return a, "", fmt.Errorf("--model-file: %w", err)
		}
		if a, derived, m.fileSpec, err = decodeModel(raw); err != nil {
			return a, "", fmt.Errorf("--model-file %s: %w", *m.file, err)
		}
		return a, derived, nil
	case arch:
		// The three sizes every architecture needs, when not given, are
		// required, not refused as a 0 the command line never said.
		var missing []string
		for _, n := range []string{"layers", "hidden", "heads"} {
			if !set[n] {
				missing = append(missing, "--"+n)
			}
		}
		if len(missing) > 0 {
			need := missing[0]
			if len(missing) > 1 {
				need = strings.Join(missing[:len(missing)-1], ", ") + " and " + missing[len(missing)-1]
			}
			return a, "", fmt.Errorf("architecture flags: %s: required to describe a model flag by flag (given: %s); or name one with --model, --model-file or --params",
				need, strings.Join(archGiven, ", "))
		}
		a = model.Arch{Name: "custom", Layers: *m.layers, Hidden: *m.hidden, Heads: *m.heads, KVHeads: *m.kvHeads, FFN: *m.ffn,
			Vocab: *m.vocab, GatedMLP: *m.gated, GLUClamp: *m.gluClamp, TiedEmbeddings: *m.tied, HeadSize: *m.headDim,
			SlidingWindow: *m.window, GlobalEvery: *m.globalEvery, MTPLayers: *m.mtp}
		if set["q-lora-rank"] || set["kv-lora-rank"] || set["qk-nope-dim"] || set["qk-rope-dim"] || set["v-head-dim"] {
			a.MLA = &model.MLA{QLoRARank: *m.qLoRA, KVLoRARank: *m.kvLoRA, QKNopeDim: *m.qkNope, QKRopeDim: *m.qkRope, VDim: *m.vHead}
		}
		if a.FFN == 0 {
			a.FFN = 4 * a.Hidden
		}
		if a.Vocab == 0 {
			a.Vocab = 51200
		}
		if set["experts"] || set["top-k"] || set["expert-ffn"] || set["moe-every"] || set["shared-experts"] || set["first-dense"] ||
			set["moe-groups"] || set["moe-topk-groups"] || set["expert-bias"] {
			a.MoE = &model.MoE{Experts: *m.experts, TopK: *m.topK, ExpertFFN: *m.expertFFN, Frequency: *m.moeEvery,
				SharedExperts: *m.shared, FirstDense: *m.firstDense, Groups: *m.groups, TopKGroups: *m.topKGroups, Bias: *m.expertBias}
		}
		if err := a.Normalise().Validate(); err != nil {
			return a, "", fmt.Errorf("architecture flags: %w", flagNames(err))
		}
		return a.Normalise(), "", nil
	case set["params"]:
		if a, derived, err = model.FromParams(*m.params); err != nil {
			return a, "", flagged(err, map[string]string{"params": "--params"})
		}
		return a, derived, nil
	}
	return a, "", errNoModel
}

// archFlags maps the architecture's field names, as model validation reports
// them, to the flags that set them.
var archFlags = map[string]string{
	"mla.qk_nope_head_dim": "--qk-nope-dim", "mla.qk_rope_head_dim": "--qk-rope-dim", "mla.v_head_dim": "--v-head-dim",
	"mla.q_lora_rank": "--q-lora-rank", "mla.kv_lora_rank": "--kv-lora-rank",
	"moe.shared_experts": "--shared-experts", "moe.first_dense": "--first-dense", "moe.expert_ffn": "--expert-ffn",
	"moe.frequency": "--moe-every", "moe.experts": "--experts", "moe.top_k": "--top-k",
	"moe.groups": "--moe-groups", "moe.topk_groups": "--moe-topk-groups", "moe.bias": "--expert-bias", "mtp_layers": "--mtp-layers",
	"sliding_window": "--sliding-window", "global_every": "--global-every", "glu_clamp": "--glu-clamp", "kv_heads": "--kv-heads", "head_dim": "--head-dim",
	"layers": "--layers", "hidden": "--hidden", "heads": "--heads", "ffn": "--ffn", "vocab": "--vocab",
}

// flagNames is err with each violation's field named by its flag.
func flagNames(err error) error {
	var parts []string
	var walk func(error)
	walk = func(e error) {
		var f *invalid.Error
		switch j, ok := e.(interface{ Unwrap() []error }); {
		case ok:
			for _, x := range j.Unwrap() {
				walk(x)
			}
		case errors.As(e, &f):
			name := f.Field
			if fl, ok := archFlags[f.Field]; ok {
				name = fl
			}
			parts = append(parts, name+": "+ruleFlags(f.Rule, archFlags)) // the fields its rule names, by their flags too
		default:
			parts = append(parts, e.Error())
		}
	}
	walk(err)
	return errors.New(strings.Join(parts, "\n"))
}

// decodeModel reads a model file: a catalog name (a JSON string), the API's
// model object ({"name": …}, {"architecture": {…}} or {"params": …}, read as the
// API reads it, and returned), or an architecture's own fields. It returns what
// was derived for a parameter count besides.
func decodeModel(raw json.RawMessage) (model.Arch, string, *pb.ModelSpec, error) {
	if err := strictjson.Check(raw); err != nil {
		return model.Arch{}, "", nil, err
	}
	var name string
	if err := json.Unmarshal(raw, &name); err == nil {
		// The service's bound on a name (wire.MaxTextBytes) before it is looked up:
		// an unknown one is quoted whole.
		if len(name) > wire.MaxTextBytes {
			return model.Arch{}, "", nil, invalid.Field("model.name", "must be at most %d bytes (got %d)", wire.MaxTextBytes, len(name))
		}
		a, err := model.Lookup(name)
		return a, "", nil, err
	}
	if isModelSpec(raw) {
		spec := new(pb.ModelSpec)
		// Decoded as the REST gateway decodes a request's model: an error names
		// the field at fault by its path (model.architecture.ffn), where it was
		// protojson's "proto: (line 1:59): unknown field \"fnn\"".
		if err := jsonreq.Unmarshal(protojson.UnmarshalOptions{}, raw, spec); err != nil {
			var je *jsonreq.Error
			switch {
			case errors.As(err, &je) && strings.HasPrefix(je.Rule, "only one of"):
				return model.Arch{}, "", nil, errors.New("model: give one of name, architecture or params")
			case errors.As(err, &je) && je.Field != "":
				return model.Arch{}, "", nil, invalid.Field("model."+je.Field, "%s", je.Rule)
			}
			return model.Arch{}, "", nil, fmt.Errorf("the API's model object: %v", err)
		}
		if err := wire.CheckText(&pb.EstimateStepRequest{Model: spec}); err != nil {
			return model.Arch{}, "", nil, err
		}
		a, derived, err := wire.ResolveModel("model", spec)
		return a, derived, spec, err
	}
	var a model.Arch
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, "", nil, archTypeError(raw, err)
	}
	a = a.Normalise()
	return a, "", nil, a.Validate()
}

// archTypeError is err, of decoding an architecture from raw, in the flag's words
// at the line it is on: a field of the wrong type by its JSON name ('line 1:
// layers: 1.5 is not an integer'), not by Go's types.
func archTypeError(raw []byte, err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	line := 1 + bytes.Count(raw[:min(max(te.Offset, 0), int64(len(raw)))], []byte("\n"))
	what := te.Value
	if n, ok := strings.CutPrefix(what, "number "); ok {
		what = n
	} else if w, ok := map[string]string{"string": "a string", "bool": "a boolean", "array": "an array", "object": "an object"}[what]; ok {
		what = w
	}
	if te.Field == "" {
		return fmt.Errorf("line %d: want a catalog name, the API's model object or an architecture's fields, not %s", line, what)
	}
	want := "a " + te.Type.Kind().String()
	switch k := te.Type.Kind(); {
	case k >= reflect.Int && k <= reflect.Uint64:
		want = "an integer"
	case k == reflect.Float32 || k == reflect.Float64:
		want = "a number"
	case k == reflect.Bool:
		want = "true or false"
	case k == reflect.Struct || k == reflect.Pointer || k == reflect.Map:
		want = "an object"
	case k == reflect.Slice:
		want = "a list"
	}
	return fmt.Errorf("line %d: %s: %s is not %s", line, te.Field, what, want)
}

// isModelSpec says whether raw, a JSON object, is the API's model (ModelSpec)
// rather than an architecture: it gives architecture or params, or a name alone
// (an architecture needs its layers and sizes besides).
func isModelSpec(raw json.RawMessage) bool {
	var keys map[string]json.RawMessage
	if json.Unmarshal(raw, &keys) != nil {
		return false
	}
	_, arch := keys["architecture"]
	_, params := keys["params"]
	_, name := keys["name"]
	return arch || params || name && len(keys) == 1
}
