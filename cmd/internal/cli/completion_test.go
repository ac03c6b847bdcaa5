package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The completion scripts offer every command and every flag of each command, and
// parse in their shell.
func TestCompletion(t *testing.T) {
	cmds := completionCommands()
	if len(cmds) != len(commands()) {
		t.Fatalf("%d commands to complete, %d commands", len(cmds), len(commands()))
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			code, out, errOut := run("completion", shell)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, c := range cmds {
				if !strings.Contains(out, c.name) {
					t.Errorf("no command %s", c.name)
				}
				for _, f := range c.flags {
					want := "--" + f.name
					if shell == "fish" {
						want = "-l " + f.name
					}
					if !strings.Contains(out, want) {
						t.Errorf("%s: no flag %s", c.name, want)
					}
				}
			}
			if shell == "bash" {
				// Each command's own flag list, not any command's.
				for _, c := range cmds {
					for _, f := range c.flags {
						if !strings.Contains(bashOpts(t, out, c.name), "--"+f.name) {
							t.Errorf("bash: %s lacks --%s", c.name, f.name)
						}
					}
				}
			}
			sh, err := exec.LookPath(shell)
			if err != nil {
				t.Skipf("no %s to check the syntax", shell)
			}
			f := filepath.Join(t.TempDir(), "stepcost."+shell)
			if err := os.WriteFile(f, []byte(out), 0o600); err != nil {
				t.Fatal(err)
			}
			if b, err := exec.Command(sh, "-n", f).CombinedOutput(); err != nil {
				t.Errorf("%s -n: %v\n%s", shell, err, b)
			}
		})
	}
	// A command's flags are all there: estimate's layout, model and remote flags.
	var est compCommand
	for _, c := range cmds {
		if c.name == "estimate" {
			est = c
		}
	}
	names := map[string]compFlag{}
	for _, f := range est.flags {
		names[f.name] = f
	}
	for _, want := range []string{"tp", "pp", "model", "layers", "server", "json", "in"} {
		if _, ok := names[want]; !ok {
			t.Errorf("estimate: no --%s", want)
		}
	}
	if !names["json"].boolean || names["tp"].boolean || !names["in"].file || len(names["cluster"].values) == 0 {
		t.Errorf("estimate's flags: %+v %+v %+v %+v", names["json"], names["tp"], names["in"], names["cluster"])
	}
	if code, _, errOut := run("completion", "tcsh"); code != 1 || !strings.Contains(errOut, "tcsh") {
		t.Errorf("unknown shell: exit %d %s", code, errOut)
	}
	if code, _, _ := run("completion"); code != 2 {
		t.Errorf("no shell: exit %d", code)
	}
}

// bashOpts is the opts line of command cmd in a bash completion script.
func bashOpts(t *testing.T, script, cmd string) string {
	t.Helper()
	_, rest, ok := strings.Cut(script, "\n        "+cmd+")\n")
	if !ok {
		t.Fatalf("no case for %s", cmd)
	}
	_, opts, _ := strings.Cut(rest, "opts=")
	line, _, _ := strings.Cut(opts, "\n")
	return line
}
