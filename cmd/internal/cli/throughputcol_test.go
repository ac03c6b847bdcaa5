package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Under --objective throughput the tables show the tokens/s per GPU they rank
// by, as --objective cost shows the cost: plan's table showed the step time
// alone, where rank 1 on 8 GPUs (27.6 s) sat above rank 4 on 64 (3.5 s) with
// nothing to say why, and rank's 120-column table left the column out.
func TestThroughputObjectiveShowsTokensPerGPU(t *testing.T) {
	t.Setenv("COLUMNS", "120")
	args := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--max-gpus", "64", "--gbs", "256", "--seq", "8192", "--top", "4", "--objective", "throughput"}
	code, js, errOut := run(append(args, "--json")...)
	var resp pb.EstimatePlanResponse
	if err := protojson.Unmarshal([]byte(js), &resp); code != exitOK || err != nil || len(resp.GetPlans()) < 2 {
		t.Fatalf("exit %d, %v: %s", code, err, errOut)
	}
	code, out, errOut := run(args...)
	if code != exitOK || !strings.Contains(out, " tokens/s/GPU ") {
		t.Fatalf("plan: exit %d %s: no tokens/s/GPU column:\n%s", code, errOut, out)
	}
	for _, p := range resp.GetPlans() {
		want := fmt.Sprintf(" %.0f ", p.GetEstimate().GetThroughput().GetTokensPerSPerGpu())
		if !strings.Contains(out, want) {
			t.Errorf("plan %d: no %q in\n%s", p.GetRank(), want, out)
		}
	}
	f := filepath.Join(t.TempDir(), "c.jsonl")
	// The second config does not fit and is dominated: its note takes the
	// width the optional column had.
	line := `{"model": {"name": "llama3-70b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 512}, "layout": {"tp": 8, "pp": %d, "dp": %d, "micro_batch": 1, "zero": %d, "sp": %t}}`
	if err := os.WriteFile(f, []byte(fmt.Sprintf(line, 4, 2, 1, true)+"\n"+fmt.Sprintf(line, 2, 4, 0, false)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run("rank", "--in", f, "--objective", "throughput")
	if head, _, _ := strings.Cut(out, "\n"); code != exitOK || !strings.Contains(head, "tokens/s/GPU") || strings.Contains(out, "left out") {
		t.Errorf("rank: exit %d %s: no tokens/s/GPU column:\n%s", code, errOut, out)
	}
}
