package cli

import (
	"strings"
	"testing"
)

// estimate's title says the overlaps and variants the layout runs, as plan's
// layout does (tp-overlap, ep-overlap, ulysses, offload-activations,
// fp8-weights): two estimates told apart only by --overlap-tp, --overlap-ep,
// --cp-all-to-all, --overlap-shared-expert, --offload-activations or
// --fp8-params had the same title over different step times.
func TestEstimateTitleSaysOverlapsAndVariants(t *testing.T) {
	for _, c := range []struct {
		base []string
		flag string
		want string
	}{
		{[]string{"--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--tp", "2", "--sp", "--mbs", "1", "--gbs", "64", "--seq", "4096"}, "--overlap-tp", ", SP, TP overlap, bf16"},
		{[]string{"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--gpus", "16", "--ep", "8", "--mbs", "1", "--gbs", "64", "--seq", "4096"}, "--overlap-ep", ", recompute none, EP overlap, bf16"},
		{[]string{"--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--cp", "2", "--mbs", "1", "--gbs", "64", "--seq", "8192"}, "--cp-all-to-all", ", recompute none, Ulysses CP, bf16"},
		{[]string{"--model", "deepseek-v3", "--cluster", "hgx-h800", "--gpus", "2048", "--pp", "16", "--ep", "64", "--zero", "1", "--mbs", "1", "--gbs", "15360", "--seq", "4096", "--precision", "fp8", "--framework", "hai-llm"}, "--overlap-shared-expert", ", recompute none, shared-expert overlap, 1f1b"},
		{[]string{"--model", "llama3-8b", "--cluster", "hgx-b200", "--gpus", "8", "--zero", "1", "--mbs", "1", "--gbs", "64", "--seq", "8192", "--precision", "fp8"}, "--offload-activations", ", recompute none, activations offloaded to the host, fp8"},
		{[]string{"--model", "llama3-8b", "--cluster", "hgx-b200", "--gpus", "8", "--zero", "1", "--mbs", "1", "--gbs", "64", "--seq", "8192", "--precision", "fp8"}, "--fp8-params", ", recompute none, fp8 (fp8 weights)"},
	} {
		title := func(args []string) string {
			code, out, errOut := run(append([]string{"estimate"}, args...)...)
			if code != exitOK {
				t.Fatalf("%v: exit %d %s", args, code, errOut)
			}
			head, _, _ := strings.Cut(out, "\n\n")
			return strings.Join(strings.Fields(head), " ")
		}
		without, with := title(c.base), title(append(append([]string(nil), c.base...), c.flag))
		if without == with || !strings.Contains(with, c.want) {
			t.Errorf("%s: title %q, without it %q; want %q", c.flag, with, without, c.want)
		}
	}
}
