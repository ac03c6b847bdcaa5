package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Flag groups of a command's --help, in the order they are shown.
var flagGroupOrder = []string{"Model", "Cluster", "Job", "Layout", "Search", "What-if", "Collective", "Input", "Output", "Server"}

// flagGroups is the group of each flag name; a flag of no group is listed under
// "Other flags" (TestEveryFlagHasAGroup keeps that list empty).
var flagGroups = func() map[string]string {
	m := map[string]string{}
	add := func(group string, names ...string) {
		for _, n := range names {
			m[n] = group
		}
	}
	add("Model", "model", "model-file", "params", "layers", "hidden", "heads", "kv-heads", "head-dim", "ffn", "vocab", "gated", "glu-clamp", "tied",
		"experts", "top-k", "expert-ffn", "moe-every", "shared-experts", "first-dense", "moe-groups", "moe-topk-groups", "expert-bias", "mtp-layers",
		"sliding-window", "global-every", "q-lora-rank", "kv-lora-rank", "qk-nope-dim", "qk-rope-dim", "v-head-dim")
	add("Cluster", "cluster", "cluster-file", "nodes", "gpus-per-node", "gpus", "min-gpus", "max-gpus", "rank-order", "placement-tolerance")
	add("Job", "gbs", "global-tokens", "seq", "precision", "framework", "grad-dtype", "fp8-params", "fp8-recipe", "fp8-activations", "fp8-kv-16bit",
		"moe-imbalance", "moe-capacity", "moe-pad-to-capacity", "moe-dispatcher", "moe-permute-fusion", "moe-router-fp32", "moe-grouped-gemm", "no-dropout", "cuda-graphs", "cp-nccl-max-ctas", "dp-nccl-max-ctas", "tp-nccl-max-ctas", "cuda-device-max-connections",
		"unfused-attention", "flash-attention-2", "zero3-on-demand", "zero3-backward-prefetch", "dp-reduce-after-backward", "dp-bucket-params", "param-gather")
	add("Layout", "tp", "pp", "dp", "cp", "ep", "etp", "zero", "mbs", "vpp", "sp", "schedule", "recompute", "recompute-layers",
		"recompute-modules", "overlap-tp", "overlap-ep", "overlap-shared-expert", "cp-variant", "cp-all-to-all", "layer-split",
		"account-embedding", "account-loss", "offload", "offload-activations", "fp8-weights", "experts-whole", "tp-across-nodes", "uneven-pp", "even-split", "max-mbs", "min-headroom")
	add("Search", "objective", "price", "tokens", "top", "include-dominated")
	add("What-if", "slow-gpu", "degraded-nic", "degraded-link", "exclude-nodes", "degraded-node", "free-map")
	add("Collective", "op", "size", "algo", "protocol", "launch", "concurrent", "steps", "step-rows")
	add("Input", "in", "layout", "fit", "from-prior", "cross-validate", "concurrency", "duration", "requests", "uncached", "timeout")
	add("Output", "json", "svg", "format", "progress", "rows", "filled", "in-sample", "out", "name")
	add("Server", "server", "tls", "tls-ca", "tls-cert", "tls-key", "token-file")
	return m
}()

// flagGroupTitles titles the groups whose name alone says too little.
var flagGroupTitles = map[string]string{
	"Model":   "Model flags (one of --model, --model-file, --params, or an architecture flag by flag)",
	"Cluster": "Cluster and job size flags",
	"Job":     "Training flags",
	"Search":  "Objective and answer flags",
	"What-if": "What-if flags (a degraded or partly free cluster)",
	"Server":  "Remote daemon flags (ask a running stepcostd instead of computing in process)",
}

// helpSummary is the help command's.
const helpSummary = "the help of a command: stepcost help <command> (also stepcost <command> --help)"

// writeHelp prints c's help: what it does, how to call it, examples, and its flags
// by group.
func writeHelp(w io.Writer, c *cobra.Command) {
	cols := helpWidth(w)
	if !c.HasParent() {
		fmt.Fprintln(w, c.Short)
		fmt.Fprintf(w, "\nUsage:\n  stepcost <command> [flags]\n")
		for _, g := range c.Groups() {
			fmt.Fprintf(w, "\n%s\n", g.Title)
			for _, sub := range commands() { // in the table's order, the most used first
				if sub.group == g.ID {
					fmt.Fprintf(w, "  %-11s %s\n", sub.name, sub.summary)
				}
			}
			if g.ID == groupOther {
				fmt.Fprintf(w, "  %-11s %s\n", "help", helpSummary)
			}
		}
		fmt.Fprintf(w, "\nGlobal flags:\n%s", flagUsages(c.PersistentFlags(), cols))
		fmt.Fprintf(w, "\nRun 'stepcost <command> --help' for a command's flags and examples.\n\n%s\n", exitCodesHelp)
		return
	}
	fmt.Fprintf(w, "%s\n\nUsage:\n  %s\n", upperFirst(c.Short), c.CommandPath()+strings.TrimPrefix(c.Use, c.Name()))
	if c.Example != "" {
		fmt.Fprintf(w, "\nExamples:\n%s\n", c.Example)
	}
	byGroup := map[string]*pflag.FlagSet{}
	inherited := c.InheritedFlags()
	c.Flags().VisitAll(func(f *pflag.Flag) { // in the order the command defines them
		if f.Hidden || f.Name == "help" || inherited.Lookup(f.Name) != nil {
			return
		}
		g := flagGroups[f.Name]
		if g == "" {
			g = "Other"
		}
		if byGroup[g] == nil {
			byGroup[g] = pflag.NewFlagSet(g, pflag.ContinueOnError)
			byGroup[g].SortFlags = false
		}
		byGroup[g].AddFlag(f)
	})
	for _, g := range append(flagGroupOrder, "Other") {
		if fs := byGroup[g]; fs != nil {
			title := flagGroupTitles[g]
			if title == "" {
				title = g + " flags"
			}
			fmt.Fprintf(w, "\n%s:\n%s", title, flagUsages(fs, cols))
		}
	}
	global := pflag.NewFlagSet("global", pflag.ContinueOnError)
	global.AddFlagSet(c.InheritedFlags())
	if h := c.Flags().Lookup("help"); h != nil {
		global.AddFlag(h)
	}
	fmt.Fprintf(w, "\nGlobal flags:\n%s\n%s\n", flagUsages(global, cols), exitCodesHelp)
}

// flagUsages is fs's flags, one or more lines each, wrapped to cols.
func flagUsages(fs *pflag.FlagSet, cols int) string {
	return fs.FlagUsagesWrapped(cols)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// flagError is a flag that cannot be parsed, with the names it may have meant.
func flagError(c *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		var names []string
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				names = append(names, f.Name)
			}
		})
		return usagef("unknown flag --%s%s", name, didYouMean(name, suggest(name, names, "--")))
	}
	return &usageError{err}
}

// didYouMean is ` (did you mean "x"?)`, or nothing when there is no suggestion.
func didYouMean(_ string, suggestions []string) string {
	switch len(suggestions) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("; did you mean %q?", suggestions[0])
	}
	q := make([]string, len(suggestions))
	for i, s := range suggestions {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "; did you mean " + strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1] + "?"
}

// suggest is the candidates close to s: a prefix of it or it of them, or within
// an edit distance of a third of its length, at least 2 (cobra's for commands)
// and at most 3. The closest ones only, at most three; each carries prefix.
func suggest(s string, candidates []string, prefix string) []string {
	s = strings.ToLower(s)
	maxDist := min(3, max(2, len(s)/3))
	type hit struct {
		name string
		d    int
	}
	var hits []hit
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := editDistance(s, lc)
		switch {
		case d <= maxDist:
		case len(s) >= 3 && (strings.HasPrefix(lc, s) || strings.HasPrefix(s, lc) && len(lc) >= 3):
			d = maxDist + 1
		default:
			continue
		}
		hits = append(hits, hit{c, d})
	}
	for i := 1; i < len(hits); i++ { // insertion sort: stable, few hits
		for j := i; j > 0 && hits[j].d < hits[j-1].d; j-- {
			hits[j], hits[j-1] = hits[j-1], hits[j]
		}
	}
	var out []string
	for i, h := range hits {
		if i == 3 || h.d > hits[0].d { // only the closest
			break
		}
		out = append(out, prefix+h.name)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b (insertions, deletions and
// substitutions of one byte).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
