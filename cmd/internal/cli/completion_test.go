package cli

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// complete is what the completion scripts get from stepcost __complete args…: the
// candidates and cobra's directive (":4" no files, ":0" files, …).
func complete(t *testing.T, args ...string) (candidates []string, directive string) {
	t.Helper()
	code, out, errOut := run(append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %q: exit %d: %s", args, code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	directive = lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		name, _, _ := strings.Cut(l, "\t")
		candidates = append(candidates, name)
	}
	return candidates, directive
}

// definedFlags is the flags command name defines, by the command tree itself.
func definedFlags(t *testing.T, name string) []string {
	t.Helper()
	root := newRoot(io.Discard, io.Discard)
	c, _, err := root.Find([]string{name})
	if err != nil || c == root {
		t.Fatalf("no command %s: %v", name, err)
	}
	var out []string
	c.Flags().VisitAll(func(f *pflag.Flag) { out = append(out, f.Name) })
	return out
}

// The completion scripts parse in their shell and complete through the program;
// the program offers every command, every flag of the command being typed (its
// own, not another's) and, for the flag being typed, the names an enum flag takes,
// the catalog's systems and models, or files.
func TestCompletion(t *testing.T) {
	for _, shell := range shells {
		t.Run(shell, func(t *testing.T) {
			code, out, errOut := run("completion", shell)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if !strings.Contains(out, "__complete") || !strings.Contains(out, "stepcost") {
				t.Errorf("the %s script does not ask stepcost __complete", shell)
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
	cmds, _ := complete(t, "")
	for _, c := range commands() {
		if !slices.Contains(cmds, c.name) {
			t.Errorf("command %s not completed: %v", c.name, cmds)
		}
		got, _ := complete(t, c.name, "--")
		for _, f := range definedFlags(t, c.name) {
			if !slices.Contains(got, "--"+f) {
				t.Errorf("%s: --%s not completed", c.name, f)
			}
		}
	}
	// Each command's own flags: collective has no --tp, plan no --op.
	if got, _ := complete(t, "collective", "--"); slices.Contains(got, "--tp") {
		t.Error("collective completes plan's --tp")
	}
	if got, _ := complete(t, "plan", "--"); slices.Contains(got, "--op") {
		t.Error("plan completes collective's --op")
	}
	// A command's flags are all there: estimate's layout, model and remote flags.
	est := definedFlags(t, "estimate")
	for _, want := range []string{"tp", "pp", "model", "layers", "server", "json", "in"} {
		if !slices.Contains(est, want) {
			t.Errorf("estimate: no --%s", want)
		}
	}
	for _, tc := range []struct {
		args      []string
		want      []string
		directive string
	}{
		{[]string{"plan", "--schedule", ""}, scheduleNames, ":6"}, // a list: no space after a name
		{[]string{"plan", "--schedule", "1f1b,zb"}, []string{"1f1b,zb-h1", "1f1b,zb-v"}, ":6"},
		{[]string{"estimate", "--schedule", ""}, scheduleNames, ":4"},
		{[]string{"estimate", "--precision", ""}, []string{"bf16", "fp16", "fp8"}, ":4"},
		{[]string{"plan", "--objective", ""}, []string{"step_time", "throughput", "cost"}, ":4"},
		{[]string{"rank", "--format", ""}, []string{"table", "json", "csv"}, ":4"},
		{[]string{"collective", "--op", "all"}, []string{"allreduce", "allgather", "alltoall"}, ":4"},
		{[]string{"estimate", "--cluster", "hgx-"}, []string{"hgx-b200", "hgx-h200", "hgx-h800"}, ":4"},
		{[]string{"estimate", "--model", "llama3-7"}, []string{"llama3-70b"}, ":4"},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish"}, ":4"},
	} {
		got, d := complete(t, tc.args...)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q: %s not offered: %v", tc.args, w, got)
			}
		}
		if d != tc.directive {
			t.Errorf("%q: directive %s, want %s", tc.args, d, tc.directive)
		}
		if tc.args[0] == "plan" && tc.args[2] == "1f1b,zb" && len(got) != 2 {
			t.Errorf("%q: %v, want only the names that complete it", tc.args, got)
		}
	}
	// Files for the flags that take one (":0", the shell's own file completion),
	// nothing for a number, and files as calibrate's arguments.
	for _, args := range [][]string{{"estimate", "--in", ""}, {"plan", "--free-map", ""}, {"estimate", "--cluster-file", ""}, {"calibrate", "--cluster", "dgx-h100", ""}} {
		if _, d := complete(t, args...); d != ":0" {
			t.Errorf("%q: directive %s, want files (:0)", args, d)
		}
	}
	if got, d := complete(t, "estimate", "--tp", ""); len(got) != 0 || d != ":4" {
		t.Errorf("--tp completes %v (%s), want nothing", got, d)
	}
	// A boolean flag takes no value: after --json comes the next flag.
	if got, _ := complete(t, "estimate", "--json", "--t"); !slices.Contains(got, "--tp") {
		t.Errorf("after --json: %v, want the flags", got)
	}
	if code, _, errOut := run("completion", "tcsh"); code != exitUsage || !strings.Contains(errOut, "tcsh") || !strings.Contains(errOut, "bash, zsh, fish") {
		t.Errorf("unknown shell: exit %d %s", code, errOut)
	}
	if code, _, _ := run("completion"); code != exitUsage {
		t.Errorf("no shell: exit %d", code)
	}
}

// The bash script completes in bash, without the bash-completion package, by
// asking the program: commands, flags, enum names (after a comma for a list) and
// catalog names.
func TestBashCompletes(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	self, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	_, script, _ := run("completion", "bash")
	dir := t.TempDir()
	f := filepath.Join(dir, "stepcost.bash")
	if err := os.WriteFile(f, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	prog := `stepcost() { STEPCOST_TEST_AS_CLI=1 "$SELF" "$@"; }
compopt() { :; } # outside a completion bash refuses it
source "$SCRIPT"
t() {
    COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
    COMPREPLY=()
    __start_stepcost stepcost "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"
    echo "${COMPREPLY[*]}"
}
t stepcost pl
t stepcost plan --sched
t stepcost plan --schedule inter
t stepcost plan --schedule 1f1b,zb
t stepcost estimate --model llama3-7
t stepcost collective --op all
t stepcost completion f
`
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", prog)
	cmd.Env = append(os.Environ(), "SELF="+self, "SCRIPT="+f)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	want := "plan\n--schedule\ninterleaved\n1f1b,zb-h1 1f1b,zb-v\nllama3-70b\nallreduce allgather alltoall\nfish\n"
	if string(out) != want {
		t.Errorf("bash completes\n%s\nwant\n%s", out, want)
	}
}

// The fish script completes in fish by asking the program.
func TestFishCompletes(t *testing.T) {
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Skip("no fish")
	}
	self, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	_, script, _ := run("completion", "fish")
	f := filepath.Join(t.TempDir(), "stepcost.fish")
	if err := os.WriteFile(f, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	prog := `function stepcost; env STEPCOST_TEST_AS_CLI=1 $SELF $argv; end
source $SCRIPT
complete -C "stepcost estimate --model llama3-7"
complete -C "stepcost collective --op all"
complete -C "stepcost plan --objective th"
`
	cmd := exec.Command(fish, "--no-config", "-c", prog)
	cmd.Env = append(os.Environ(), "SELF="+self, "SCRIPT="+f, "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fish: %v\n%s", err, out)
	}
	want := "llama3-70b\nallgather\nallreduce\nalltoall\nthroughput\n" // fish sorts them
	if string(out) != want {
		t.Errorf("fish completes\n%s\nwant\n%s", out, want)
	}
}
