package cli

import (
	"strings"
	"testing"
)

// estimate's title names what layout.layer_split lists: one entry a stage
// without interleaving, one a model chunk with it (pp × v entries, chunk c of
// stage s at c × pp + s, as the API's field says), never calling 12 chunks of
// an interleaved pipeline of 4 "layers per stage"; ZB-V's two chunks a stage are
// its V, not an interleaving depth ("zb-v v=2").
func TestEstimateTitleNamesTheSplitsUnit(t *testing.T) {
	for _, tc := range []struct {
		args          []string
		want, wantNot string
	}{
		{[]string{"--pp", "3"}, "1f1b, layers per stage 11×2, 10,", "chunk"},
		{[]string{"--pp", "4", "--schedule", "interleaved", "--vpp", "3"}, "interleaved v=3, layers per model chunk 3×10, 1×2 (chunk c of stage s at c × pp + s),", "per stage"},
		{[]string{"--pp", "4", "--schedule", "zb-v", "--framework", "torchtitan", "--zero", "1"}, "zb-v (a V of 2 chunks a stage),", "v=2"},
		{[]string{"--pp", "3", "--recompute", "full", "--recompute-layers", "4"}, "(4 layers per stage)", "chunks together"},
		{[]string{"--pp", "4", "--schedule", "interleaved", "--vpp", "3", "--recompute", "full", "--recompute-layers", "4"}, "(4 layers per stage, its 3 chunks together)", "layers per stage 3"},
	} {
		args := append([]string{"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "24", "--tp", "2", "--gbs", "48", "--seq", "4096"}, tc.args...)
		code, out, errOut := run(args...)
		title := strings.Join(strings.Fields(strings.SplitN(out, "\n\n", 2)[0]), " ")
		if code != exitOK || !strings.Contains(title, tc.want) || strings.Contains(title, tc.wantNot) {
			t.Errorf("%q: exit %d, title %q (%s); want %q", args, code, title, errOut, tc.want)
		}
	}
}
