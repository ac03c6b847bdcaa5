package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// helpFlags is the usage text of each flag of a command's --help, its wrapped
// lines joined.
func helpFlags(t *testing.T, cmd string) map[string]string {
	t.Helper()
	code, help, errOut := run(cmd, "--help")
	if code != exitOK {
		t.Fatalf("%s --help: exit %d: %s", cmd, code, errOut)
	}
	start := regexp.MustCompile(`^\s+(?:-\w, )?--([a-z0-9-]+)(?: [a-zA-Z]+)?\s{2,}(\S.*)$`)
	more := regexp.MustCompile(`^\s{10,}(\S.*)$`)
	out := map[string]string{}
	last := ""
	for _, line := range strings.Split(help, "\n") {
		if m := start.FindStringSubmatch(line); m != nil {
			last = m[1]
			out[last] = m[2]
			continue
		}
		if m := more.FindStringSubmatch(line); m != nil && last != "" {
			out[last] += " " + m[1]
			continue
		}
		last = ""
	}
	if len(out) < 5 {
		t.Fatalf("%s --help: %d flags parsed:\n%s", cmd, len(out), help)
	}
	return out
}

// answer is a --json answer without what differs from call to call.
func answer(out string) string {
	// The layout's rank order is echoed as the request gave it ("" for the default).
	return regexp.MustCompile(`"elapsed_ms":\s*[0-9.e+-]+|"rank_order":\s*"[^"]*"`).ReplaceAllString(out, "")
}

// A default --help prints, "(default X)", is the default used: the answer with
// the flag left out is the answer with --flag X, on requests where a framework's
// own default could stand in for it (Composer's backward prefetch is post).
func TestPrintedDefaultsAreTheDefaults(t *testing.T) {
	configs := filepath.Join(t.TempDir(), "c.jsonl")
	if err := os.WriteFile(configs, []byte(`{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 16}, "layout": {"tp": 2, "pp": 1, "dp": 4, "micro_batch": 1}}
{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 16}, "layout": {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 2, "zero": 3}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	moe := []string{"--layers", "4", "--hidden", "1024", "--heads", "8", "--experts", "8", "--top-k", "2", "--cluster", "dgx-h100"}
	bases := map[string][][]string{
		"estimate": {
			append(append([]string(nil), moe...), "--gpus", "8", "--tp", "2", "--pp", "2", "--mbs", "1", "--gbs", "16", "--seq", "2048", "--json"),
			{"--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--tp", "1", "--pp", "1", "--zero", "3", "--mbs", "1", "--gbs", "16", "--seq", "4096", "--framework", "composer", "--json"},
		},
		"plan": {
			append(append([]string(nil), moe...), "--gpus", "8", "--gbs", "16", "--seq", "2048", "--top", "3", "--json"),
			{"--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--gbs", "16", "--seq", "4096", "--zero", "3", "--framework", "composer", "--top", "3", "--json"},
		},
		"collective": {{"--cluster", "dgx-h100", "--nodes", "2", "--size", "64MiB", "--json"}},
		"rank":       {{"--in", configs}},
	}
	def := regexp.MustCompile(`\(default ([A-Za-z0-9._-]+)\)`)
	for cmd, bs := range bases {
		for flag, usage := range helpFlags(t, cmd) {
			m := def.FindStringSubmatch(strings.Join(strings.Fields(usage), " "))
			// --progress: a terminal's, no answer; "(default all)", "(default both)",
			// "(default --ffn)": words, not a value.
			if m == nil || flag == "progress" || m[1] == "all" || m[1] == "both" || strings.HasPrefix(m[1], "-") {
				continue
			}
			compared, left := false, 0
			for _, base := range bs {
				if strings.Contains(" "+strings.Join(base, " ")+" ", " --"+flag+" ") {
					continue
				}
				left++
				code, want, errOut := run(append([]string{cmd}, base...)...)
				if code != exitOK {
					t.Fatalf("%s %q: exit %d: %s", cmd, base, code, errOut)
				}
				args := append(append([]string{cmd}, base...), "--"+flag, m[1])
				code, got, _ := run(args...)
				if code != exitOK {
					continue // the flag does not go with this request (--vocab with --model)
				}
				compared = true
				if answer(got) != answer(want) {
					t.Errorf("%s --help prints --%s's default as %s, but the answer without the flag is not the answer with it (%q)", cmd, flag, m[1], args)
				}
			}
			if !compared && left > 0 {
				t.Errorf("%s --%s (default %s): no request to compare on", cmd, flag, m[1])
			}
		}
	}
}
