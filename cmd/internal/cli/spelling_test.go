package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// In process and through a daemon, --json is the same answer: a search's
// no_plan_reason and a ranked config's refusal name enum values as the API does
// (SCHEDULE_INTERLEAVED), as the daemon answers; in process they were the command
// line's (interleaved). Standard error says the reason in the flags' words in
// both; rank's rows say a refusal in the file's words, the API's.
func TestSpellingSameInProcessAndRemote(t *testing.T) {
	addr := daemon(t)
	plan := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gbs", "8", "--seq", "4096", "--gpus", "8", "--tp", "3", "--json"}
	_, local, localErr := run(plan...)
	_, remote, remoteErr := run(append(plan, "--server", addr)...)
	if withoutVolatile(t, "plan", local) != withoutVolatile(t, "plan", remote) {
		t.Errorf("plan --json: in process and remote differ:\n%s\n---\n%s", local, remote)
	}
	if !strings.Contains(local, "constraints.schedules [SCHEDULE_1F1B SCHEDULE_INTERLEAVED]") {
		t.Errorf("plan --json: no_plan_reason not the API's:\n%s", local)
	}
	for _, e := range []string{localErr, remoteErr} {
		if !strings.Contains(e, "--tp [3], --schedule [1f1b interleaved]") {
			t.Errorf("plan: stderr %q, want the flags' words", e)
		}
	}

	f := filepath.Join(t.TempDir(), "c.jsonl")
	if err := os.WriteFile(f, []byte(`{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 16}, "layout": {"tp": 1, "pp": 2, "dp": 4, "micro_batch": 1, "schedule": "SCHEDULE_ZB_V"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"json", "csv", "table"} {
		args := []string{"rank", "--in", f, "--format", format, "--wide"}
		_, local, _ := run(args...)
		_, remote, _ := run(append(args, "--server", addr)...)
		if local != remote {
			t.Errorf("rank --format %s: in process and remote differ:\n%s\n---\n%s", format, local, remote)
		}
		if !strings.Contains(local, "(got SCHEDULE_ZB_V)") {
			t.Errorf("rank --format %s: the refusal is not in the file's words:\n%s", format, local)
		}
	}
}
