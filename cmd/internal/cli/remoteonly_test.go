package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The flags that say how to reach a daemon (--tls, --tls-ca, --tls-cert,
// --tls-key, --token-file) are refused without --server, naming the flag: the
// command would run in process and drop them without a word (a --token-file
// that does not exist, a CA that would have been trusted).
func TestRemoteFlagsWithoutServerRefused(t *testing.T) {
	configs := filepath.Join(t.TempDir(), "c.jsonl")
	if err := os.WriteFile(configs, []byte(`{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 16}, "layout": {"tp": 2, "pp": 1, "dp": 4, "micro_batch": 1}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, base := range [][]string{
		{"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--tp", "8", "--mbs", "1", "--gbs", "8", "--seq", "4096"},
		{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "8", "--seq", "4096", "--top", "1"},
		{"collective", "--cluster", "dgx-h100", "--nodes", "2", "--size", "64MiB"},
		{"rank", "--in", configs},
	} {
		if code, _, errOut := run(base...); code != exitOK {
			t.Fatalf("%q: exit %d: %s", base, code, errOut)
		}
		for _, flag := range [][]string{{"--tls"}, {"--tls-ca", "ca.pem"}, {"--tls-cert", "c.pem"}, {"--tls-key", "k.pem"}, {"--token-file", "no-such-token"}} {
			args := append(append([]string(nil), base...), flag...)
			code, out, errOut := run(args...)
			if code != exitFailure || out != "" || !strings.Contains(errOut, flag[0]+": only with --server") {
				t.Errorf("%q: exit %d, stdout %d bytes, %q; want exit 1 naming %s", args, code, len(out), errOut, flag[0])
			}
			// --server "" is no server: the command runs in process.
			args = append(args, "--server", "")
			if code, _, errOut := run(args...); code != exitFailure || !strings.Contains(errOut, flag[0]+": only with --server") {
				t.Errorf("%q: exit %d, %q", args, code, errOut)
			}
		}
	}
}
