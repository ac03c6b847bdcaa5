package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// A rank --in line's decoding error is placed on the file's line, said first
// ("line 2: …"), and within it by column only: a line cut short said "line 2:
// not an EstimateStepRequest: ends inside a value at line 1 (cut short?)", the
// decoder's line 1 of the one line it was given, and a field violation's
// description kept "at line 1, column N" where the message said "at column N".
func TestRankLineErrorsSayNoOtherLine(t *testing.T) {
	dir := t.TempDir()
	const ok = `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 64}, "layout": {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1}}`
	in := filepath.Join(dir, "r.jsonl")
	body := ok + "\n" + `{"model": {"name": "llama3-8b"}, "layout": {"tp": 1` + "\n" + strings.Replace(ok, `"tp": 1,`, `"tp": 1,,`, 1) + "\n"
	if err := os.WriteFile(in, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run("rank", "--in", in, "--format", "json")
	var resp pb.RankConfigsResponse
	if err := protojson.Unmarshal([]byte(out), &resp); err != nil || code != exitFailure || len(resp.GetResults()) != 3 {
		t.Fatalf("rank --in: exit %d, %v: %.300s%.300s", code, err, out, errOut)
	}
	for _, r := range resp.GetResults()[1:] {
		e := r.GetError()
		texts := []string{e.GetMessage()}
		for _, v := range e.GetViolations() {
			texts = append(texts, v.GetDescription())
		}
		for _, s := range texts {
			if strings.Contains(s, "line 1") {
				t.Errorf("config %d: %q speaks of a line 1 of a file whose line it is not", r.GetIndex(), s)
			}
		}
	}
	if m := resp.GetResults()[1].GetError().GetMessage(); m != "line 2: not an EstimateStepRequest: ends inside a value (cut short?)" {
		t.Errorf("line cut short: %q", m)
	}
	if m := resp.GetResults()[2].GetError().GetMessage(); !strings.HasPrefix(m, "line 3: not an EstimateStepRequest: ") || !strings.Contains(m, "at column ") {
		t.Errorf("malformed line: %q", m)
	}
}
