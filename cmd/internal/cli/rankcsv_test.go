package cli

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// rank's CSV says the layout each config ran with, as the table and the JSON do:
// a config leaving pp and cp out runs with 1 each, not the 0 the request holds;
// and a config that failed has its error, rank 0 (as the API's), and no numbers:
// no step time, MFU, memory or score of 0 to be sorted with the real ones.
func TestRankCSVSaysWhatRan(t *testing.T) {
	f := filepath.Join(t.TempDir(), "c.jsonl")
	lines := `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 16}, "layout": {"tp": 2, "dp": 4, "micro_batch": 1}}
{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 16}, "layout": {"tp": 3, "dp": 4, "micro_batch": 1}}
`
	if err := os.WriteFile(f, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run("rank", "--in", f, "--format", "csv")
	if code != exitFailure {
		t.Fatalf("exit %d, want 1 (line 2 fails): %s", code, errOut)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("csv %v: %q", err, out)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	_, js, _ := run("rank", "--in", f, "--format", "json")
	var resp pb.RankConfigsResponse
	if err := protojson.Unmarshal([]byte(js), &resp); err != nil {
		t.Fatalf("json: %v", err)
	}
	var ok *pb.RankedConfig
	for _, r := range resp.GetResults() {
		if r.GetError() == nil {
			ok = r
		}
	}
	if ok == nil {
		t.Fatalf("no ranked config in %s", js)
	}
	e, l := ok.GetEstimate(), ok.GetEstimate().GetLayout()
	for _, r := range rows[1:] {
		switch r[col["line"]] {
		case "1":
			for name, want := range map[string]string{
				"rank": "1", "tp": fmt.Sprint(l.GetTp()), "pp": fmt.Sprint(l.GetPp()), "dp": fmt.Sprint(l.GetDp()), "cp": fmt.Sprint(l.GetCp()),
				"zero": fmt.Sprint(l.GetZero()), "micro_batch": fmt.Sprint(l.GetMicroBatch()),
				"step_time_s": fmt.Sprintf("%g", e.GetStepTimeS()), "mfu": fmt.Sprintf("%g", e.GetThroughput().GetMfu()),
				"memory_gb": fmt.Sprintf("%g", e.GetMemory().GetTotalGb()), "gpus": fmt.Sprint(e.GetGpus()), "score": fmt.Sprintf("%g", ok.GetScore()), "error": "",
			} {
				if got := r[col[name]]; got != want {
					t.Errorf("line 1 %s: %q, the JSON's %q", name, got, want)
				}
			}
			if r[col["pp"]] != "1" || r[col["cp"]] != "1" {
				t.Errorf("line 1 ran with pp 1, cp 1: csv says pp %s, cp %s", r[col["pp"]], r[col["cp"]])
			}
		case "2":
			if r[col["rank"]] != "0" || !strings.Contains(r[col["error"]], "layout.tp") {
				t.Errorf("line 2: rank %q, error %q", r[col["rank"]], r[col["error"]])
			}
			for _, name := range []string{"step_time_s", "tokens_per_s_per_gpu", "mfu", "memory_gb", "fits", "dominated", "gpus", "score"} {
				if got := r[col[name]]; got != "" {
					t.Errorf("line 2 failed, yet its %s is %q", name, got)
				}
			}
		default:
			t.Errorf("row of no line: %q", r)
		}
	}
}
