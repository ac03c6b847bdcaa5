package cli

import (
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Every command's --help says what it does, how to call it, gives examples and
// lists its flags by group, with the exit codes; the top-level help lists every
// command by group.
func TestHelp(t *testing.T) {
	code, out, _ := run("--help")
	if code != exitOK {
		t.Fatalf("--help: exit %d", code)
	}
	for _, want := range []string{"Estimate and plan:", "Calibrate and check the model:", "Other commands:", "Exit status:", "--wide"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q:\n%s", want, out)
		}
	}
	for _, c := range commands() {
		if !regexp.MustCompile(`(?m)^  ` + c.name + ` +` + regexp.QuoteMeta(c.summary) + `$`).MatchString(out) {
			t.Errorf("--help does not list %s", c.name)
		}
		for _, args := range [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}} {
			code, help, errOut := run(args...)
			if code != exitOK || errOut != "" {
				t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
			}
			if !strings.Contains(help, "Usage:\n  stepcost "+c.name) || !strings.Contains(help, "Examples:\n") ||
				!strings.Contains(help, "  stepcost "+c.name) && c.name != "completion" || !strings.Contains(help, "Exit status:") {
				t.Errorf("%q: no usage, examples or exit status:\n%s", args, help)
			}
		}
	}
	// plan's and estimate's flags in their groups, in this order.
	for _, cmd := range []string{"plan", "estimate"} {
		_, help, _ := run(cmd, "--help")
		last := -1
		for _, title := range []string{"Model flags", "Cluster and job size flags:", "Training flags:", "Layout flags:", "What-if flags", "Output flags:", "Remote daemon flags", "Global flags:"} {
			i := strings.Index(help, "\n"+title)
			if i < 0 || i < last {
				t.Errorf("%s --help: %q missing or out of order", cmd, title)
			}
			last = i
		}
		if strings.Contains(help, "Other flags:") {
			t.Errorf("%s --help has flags of no group", cmd)
		}
		// A flag sits in its group: --schedule under Layout, --slow-gpu under What-if.
		layout := help[strings.Index(help, "\nLayout flags:"):strings.Index(help, "\nWhat-if flags")]
		if !strings.Contains(layout, "--schedule") || strings.Contains(layout, "--slow-gpu") {
			t.Errorf("%s --help: --schedule not under Layout, or --slow-gpu there", cmd)
		}
	}
	// Asked for, help goes to standard output; a wrong command line gets a hint on
	// standard error.
	if code, out, errOut := run("plan", "--bogus"); code != exitUsage || out != "" || !strings.Contains(errOut, "Run 'stepcost plan --help' for usage.") {
		t.Errorf("plan --bogus: exit %d, %q %q", code, out, errOut)
	}
}

// Every flag of every command is in a --help group.
func TestEveryFlagHasAGroup(t *testing.T) {
	root := newRoot(io.Discard, io.Discard)
	for _, c := range root.Commands() {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if _, ok := flagGroups[f.Name]; !ok && f.Name != "help" {
				t.Errorf("%s --%s: in no flag group", c.Name(), f.Name)
			}
		})
	}
}

// A mistyped command, flag or enum value is refused as bad usage (exit 2) with the
// names it may have meant.
func TestDidYouMean(t *testing.T) {
	plan := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "64", "--seq", "4096"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plna"}, `unknown command "plna"; did you mean "plan"?`},
		{[]string{"estimat"}, `did you mean "estimate"?`},
		{[]string{"colective", "--size", "1G"}, `did you mean "collective"?`},
		{append(plan, "--gpu", "8"), `unknown flag --gpu; did you mean "--gpus"?`},
		{append(plan, "--precison", "fp8"), `did you mean "--precision"?`},
		{append(plan, "--schedule", "interleave"), `did you mean "interleaved"?`},
		{append(plan, "--schedule", "1f1b,zbv"), `did you mean "zb-v"?`},
		{append(plan, "--objective", "throughtput"), `did you mean "throughput"?`},
		{append(plan, "--framework", "torchtitn"), `did you mean "torchtitan"?`},
		{[]string{"estimate", "--recompute", "selctive"}, `did you mean "selective"?`},
		{[]string{"collective", "--cluster", "dgx-h100", "--size", "1G", "--algo", "rng"}, `did you mean "ring"?`},
		{[]string{"rank", "--in", "x", "--format", "jsn"}, `did you mean "json"?`},
		{[]string{"completion", "bsh"}, `did you mean "bash"`},
		{[]string{"help", "plna"}, `unknown command "plna"; did you mean "plan"?`},
	} {
		code, out, errOut := run(tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, %q; want exit 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
	if got := suggest("zzzz", scheduleNames, ""); len(got) != 0 {
		t.Errorf("zzzz suggests %v", got)
	}
}

// Every enum flag of every command refuses a name it does not take the same way,
// listing every name it takes; it takes them in any case.
func TestEnumFlagsOneErrorStyle(t *testing.T) {
	root := newRoot(io.Discard, io.Discard)
	n := 0
	for _, c := range root.Commands() {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			e, ok := f.Value.(*enumValue)
			if !ok {
				return
			}
			n++
			args := []string{c.Name(), "--" + f.Name, "no-such-name"}
			code, _, errOut := run(args...)
			want := regexp.MustCompile(`^stepcost ` + c.Name() + `: invalid argument "no-such-name" for "--` + f.Name + `" flag: want (one of|a comma-separated list of) ` +
				regexp.QuoteMeta(strings.Join(e.names, ", ")) + "\n")
			if code != exitUsage || !want.MatchString(errOut) {
				t.Errorf("%q: exit %d, %q", args, code, errOut)
			}
			// Each name it lists is taken, in upper case too.
			for _, name := range e.names {
				v := &enumValue{p: new(string), names: e.names, accept: e.accept, list: e.list}
				if err := v.Set(strings.ToUpper(name)); err != nil {
					t.Errorf("%s --%s %s: %v", c.Name(), f.Name, strings.ToUpper(name), err)
				}
			}
		})
	}
	// plan: precision, objective, sp, cp-variant, overlap-ep, overlap-tp, schedule,
	// recompute, zero3-backward-prefetch, fp8-recipe, moe-dispatcher, offload,
	// framework; estimate, rank and collective theirs.
	if n < 29 {
		t.Errorf("%d enum flags; plan, estimate, rank and collective have more", n)
	}
	// An empty value is the default of a flag whose default is empty, and refused
	// by the others.
	if code, _, errOut := run("rank", "--in", "x", "--objective", ""); code != exitUsage || !strings.Contains(errOut, `invalid argument "" for "--objective" flag: want one of step_time`) {
		t.Errorf("--objective '': exit %d, %q", code, errOut)
	}
	if code, _, errOut := run("plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "64", "--seq", "4096", "--top", "1", "--schedule", "", "--framework", ""); code != exitOK {
		t.Errorf("--schedule '' --framework '': exit %d: %s", code, errOut)
	}
	// Aliases the estimator takes stay taken.
	for _, args := range [][]string{
		{"collective", "--cluster", "dgx-h100", "--op", "all-reduce", "--size", "1M", "--algo", "double-tree", "--launch", "torch"},
		{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "64", "--seq", "4096", "--sp", "true", "--cp-variant", "all-to-all", "--top", "1", "--framework", "Megatron-Core"},
	} {
		if code, _, errOut := run(args...); code != exitOK {
			t.Errorf("%q: exit %d: %s", args, code, errOut)
		}
	}
}

// Exit codes: 2 for a command line that cannot be understood (a value not of its
// flag's type, whether the flag parser or the command reads it), 1 for a command
// that ran and failed (flags missing or in conflict, values out of range
// included), 0 for success and for help; as exitCodesHelp says.
func TestExitCodes(t *testing.T) {
	plan := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gbs", "64", "--seq", "4096"}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"frobnicate"}, exitUsage},
		{[]string{"plan", "--no-such-flag"}, exitUsage},
		{append(plan, "--gpus", "eight"), exitUsage},                   // not an integer
		{append(plan, "--gpus", "8", "stray"), exitUsage},              // a positional argument
		{append(plan, "--gpus", "8", "--precision", "fp4"), exitUsage}, // not one of its values
		{[]string{"calibrate", "--cluster", "dgx-h100"}, exitUsage},    // no files
		{[]string{"completion"}, exitUsage},                            // no shell
		// Values not of their flag's type, where the flag is a list or a size read
		// after parsing: as --gpus eight.
		{append(plan, "--gpus", "8", "--tp", "1,two"), exitUsage},
		{append(plan, "--gpus", "8", "--exclude-nodes", "first"), exitUsage},
		{append(plan, "--gpus", "8", "--degraded-node", "0:nic=half"), exitUsage},
		{append(plan, "--gpus", "8", "--degraded-node", "last:nic=0.5"), exitUsage},
		{[]string{"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--tp", "1", "--pp", "2", "--dp", "4", "--mbs", "1", "--gbs", "64", "--seq", "4096", "--layer-split", "16,x"}, exitUsage},
		{[]string{"collective", "--cluster", "dgx-h100", "--op", "allreduce", "--size", "lots"}, exitUsage},
		{[]string{"collective", "--cluster", "dgx-h100", "--op", "allreduce", "--size", "1QB"}, exitUsage},
		// Values of the right type the command refuses, flags missing or in conflict.
		{append(plan, "--gpus", "8", "--exclude-nodes", "7"), exitFailure}, // a 1-node cluster
		{append(plan, "--gpus", "8", "--degraded-node", "0:nic=2"), exitFailure},
		{[]string{"collective", "--cluster", "dgx-h100", "--op", "allreduce", "--size", "0"}, exitFailure},
		{[]string{"collective", "--cluster", "dgx-h100", "--op", "allreduce"}, exitFailure}, // no --size
		{plan, exitFailure}, // no --gpus or --max-gpus
		{[]string{"accuracy", "--from-prior"}, exitFailure},
		{[]string{"accuracy", "--fit", "--cross-validate"}, exitFailure},
		{[]string{"plan", "--model", "llama3-405b", "--cluster", "dgx-h100", "--gbs", "64", "--seq", "4096", "--gpus", "8"}, exitFailure}, // no feasible plan
		{[]string{"plan", "--model", "llama3-8b", "--cluster", "dgx-z9", "--gpus", "8", "--gbs", "64", "--seq", "4096"}, exitFailure},     // no such system
		{[]string{"estimate", "--in", "/nonexistent/request.json"}, exitFailure},
		{[]string{"help"}, exitOK},
		{[]string{"plan", "--help"}, exitOK},
		{[]string{"version"}, exitOK},
	} {
		if code, _, errOut := run(tc.args...); code != tc.code {
			t.Errorf("%q: exit %d, want %d: %s", tc.args, code, tc.code, errOut)
		}
	}
}

// The single-dash spelling of the standard flag package still works.
func TestSingleDashFlags(t *testing.T) {
	code, out, errOut := run("collective", "-cluster", "dgx-h100", "-nodes=2", "-size", "64M", "-json")
	if code != exitOK || !strings.Contains(strings.ReplaceAll(out, " ", ""), `"ranks":16`) {
		t.Errorf("exit %d: %s%s", code, out, errOut)
	}
	// A value that starts with a dash is a value, not a flag.
	if code, _, errOut := run("collective", "--cluster", "dgx-h100", "--size", "-5"); code != exitFailure || !strings.Contains(errOut, "--size") {
		t.Errorf("--size -5: exit %d: %s", code, errOut)
	}
}

// Each name of TestEveryRequestFieldHasAFlag's maps is a flag the command defines.
func TestRequestFieldFlagsExist(t *testing.T) {
	for cmd, m := range map[string][]map[string]string{"estimate": {estimateFlags, archFlags}, "plan": {planFlags, archFlags}, "rank": {rankFlags}} {
		defined := definedFlags(t, cmd)
		for _, flags := range m {
			for field, flag := range flags {
				for _, f := range strings.Split(flag, "/") { // "--layers/--hidden"
					name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(f), "--"), " ")
					if !slices.Contains(defined, name) {
						t.Errorf("%s: %s's flag --%s is not defined", cmd, field, name)
					}
				}
			}
		}
	}
}

// An integer flag the API carries as an int32 is refused, by its flag, when it
// does not fit: 2³² + 1 micro-batch would otherwise reach the estimator as 1 and
// 2³² + 8192 tokens as 8192, a wrong answer without a word.
func TestIntFlagsOutOfRange(t *testing.T) {
	est := []string{"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--tp", "8", "--gbs", "16"}
	plan := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gbs", "16", "--seq", "4096"}
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{append(est, "--seq", "4096", "--mbs", "4294967297"), "--mbs"},
		{append(est, "--seq", "4294971392"), "--seq"},
		{append(est, "--seq", "4096", "--pp", "-4294967295"), "--pp"},
		{append(plan, "--gpus", "4294967304"), "--gpus"},
		{append(plan, "--gpus", "8", "--top", "4294967297"), "--top"},
		{[]string{"collective", "--cluster", "dgx-h100", "--op", "allreduce", "--size", "1GiB", "--nodes", "4294967297"}, "--nodes"},
	} {
		code, out, errOut := run(tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, `for "`+tc.flag+`" flag: out of range`) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and %s out of range", tc.args, code, out, errOut, exitUsage, tc.flag)
		}
	}
	// The global batch in tokens is an int64 in the API: a value past 2³¹ is the
	// estimator's to judge, not refused as out of range.
	if _, _, errOut := run("estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--tp", "8", "--seq", "4096", "--global-tokens", "8589934592"); strings.Contains(errOut, "out of range") {
		t.Errorf("--global-tokens 2^33 refused as out of range: %s", errOut)
	}
}

// A negative or zero job size, cluster size, batch or sequence is refused by the
// flag that carries it, with the value given: "required" would tell someone who
// gave --gpus -8 that they gave nothing.
func TestPlanSizesNamed(t *testing.T) {
	base := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(base, "--gpus", "-8", "--gbs", "16", "--seq", "4096"), "--gpus: must be at least 1 (got -8)"},
		{append(base, "--max-gpus", "-16", "--gbs", "16", "--seq", "4096"), "--max-gpus: must be at least 1 (got -16)"},
		{append(base, "--gbs", "16", "--seq", "4096"), "--gpus or --max-gpus: required"},
		// --min-gpus bounds --max-gpus's range; with --gpus it was ignored without a word.
		{append(base, "--gpus", "16", "--min-gpus", "8", "--gbs", "16", "--seq", "4096"), "--gpus and --min-gpus: give --gpus, or --min-gpus with --max-gpus"},
		{append(base, "--gpus", "8", "--nodes", "-4", "--gbs", "16", "--seq", "4096"), "--nodes: must be at least 1 (got -4)"},
		// A 0 given is a value given, not the flag left out.
		{append(base, "--max-gpus", "0", "--gbs", "16", "--seq", "4096"), "--max-gpus: must be at least 1 (got 0)"},
		{append(base, "--gpus", "0", "--gbs", "16", "--seq", "4096"), "--gpus: must be at least 1 (got 0)"},
		{append(base, "--min-gpus", "16", "--gbs", "16", "--seq", "4096"), "--min-gpus: goes with --max-gpus"},
		// A size past the service's limit names the flag, not the cluster's
		// node count the command line derived from it.
		{append(base, "--max-gpus", "1000000000", "--gbs", "16", "--seq", "4096"), "--max-gpus: 1000000000 GPUs exceed the limit of 131072"},
		{append(base, "--gpus", "8", "--gbs", "-16", "--seq", "4096"), "--gbs: must be at least 1 (got -16)"},
		{append(base, "--gpus", "8", "--gbs", "16", "--seq", "0"), "--seq: required, at least 1 (got 0)"},
		// An explicit --top 0 is not the API's unset top_k: the flag's default is 10.
		{append(base, "--gpus", "8", "--gbs", "16", "--seq", "4096", "--top", "0"), "--top: must be between 1 and 1000 (got 0)"},
		{append(base, "--gpus", "8", "--gbs", "16", "--seq", "4096", "--top", "1001"), "--top: must be between 1 and 1000 (got 1001)"},
	} {
		code, _, errOut := run(tc.args...)
		if code != exitFailure || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, exitFailure, tc.want)
		}
	}
}

// A parameter count the shape cannot be derived from is refused by its flag,
// once: "--params: must be …", not "--params: params: must be …".
func TestParamsNamedOnce(t *testing.T) {
	code, _, errOut := run("plan", "--params", "0", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "16", "--seq", "4096")
	if code != exitFailure || !strings.Contains(errOut, "stepcost plan: --params: must be a finite number of parameters") {
		t.Errorf("--params 0: exit %d, stderr %q", code, errOut)
	}
}

// A free map's bad node or GPU is refused by the node it names: the request
// lists the nodes in its own order, so its index would point elsewhere, and a node
// past the cluster's largest size is the free map's error, not the cluster's.
func TestFreeMapNamesTheNode(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ free, want string }{
		{`{"0": [0, 1, 2, 3, 4, 5, 6, 7], "9": [0, 8]}`, "--free-map: node 9: GPU 8 is not one of the node's 8 GPUs (0 to 7)"},
		{`{"0": [0, 1, 2, 3, 4, 5, 6, 7], "3": [-1]}`, "--free-map: node 3: GPU -1 is not one of the node's 8 GPUs (0 to 7)"},
		{`{"70000": [0]}`, "--free-map: node 70000: must be between 0 and 65535"},
		{`{"-1": [0]}`, "--free-map: node -1: must be between 0 and 65535"},
		{`{"0": [0, 1, 2, 3, 4, 5, 6, 7], "2": [1, 1]}`, "--free-map: node 2: GPU 1 is listed twice"},
	} {
		f := dir + "/free.json"
		if err := os.WriteFile(f, []byte(tc.free), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := run("plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "16", "--seq", "4096", "--free-map", f)
		if code != exitFailure || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want %q", tc.free, code, errOut, tc.want)
		}
	}
}

// rank's table gives every row's file line, ranked rows as failed ones (it gave
// a ranked row's position among the config lines, so a file with a comment first
// showed "0" for line 2 and two rows could show the same number), and a ranked
// row's whole layout: configs that differ only in their schedule differ in it
// (under hai-llm, which runs both 1F1B and DualPipe).
func TestRankTableLinesAndLayouts(t *testing.T) {
	cfg := func(schedule string) string {
		return `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 64, "framework": "hai-llm"}, "layout": {"tp": 4, "pp": 2, "dp": 1, "micro_batch": 1, "schedule": "` + schedule + `"}}`
	}
	f := t.TempDir() + "/configs.jsonl"
	body := "# two schedules and a bad line\n" + cfg("SCHEDULE_1F1B") + "\nnot json\n" + cfg("SCHEDULE_DUALPIPE") + "\n"
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run("rank", "--in", f, "--wide")
	if code != exitFailure || !strings.Contains(errOut, "(line 3)") {
		t.Fatalf("exit %d, stderr %q; want exit 1 naming line 3", code, errOut)
	}
	rows := map[string]string{} // file line → row
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[0] != "rank" {
			rows[f[1]] = l
		}
	}
	if !strings.Contains(rows["2"], "1f1b") || !strings.Contains(rows["4"], "dualpipe") || !strings.Contains(rows["3"], "not an EstimateStepRequest") || len(rows) != 3 {
		t.Errorf("rows by file line %q; want 2 (1f1b), 3 (the bad line) and 4 (dualpipe):\n%s", rows, out)
	}
}

// A one-GPU group is the service's error in a table as in JSON (the table said
// "time 0" and exited 0, the JSON was refused): the same question, one answer.
func TestCollectiveOneGPUGroupRefused(t *testing.T) {
	base := []string{"collective", "--cluster", "dgx-h100", "--op", "sendrecv", "--size", "1GiB", "--nodes", "1", "--gpus-per-node", "1"}
	for _, args := range [][]string{base, append(slices.Clone(base), "--json")} {
		code, out, errOut := run(args...)
		if code != exitFailure || out != "" || !strings.Contains(errOut, "--gpus-per-node: the group must have at least 2 GPUs") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 1 and the group's rule", args, code, out, errOut)
		}
	}
}

// The cost objective without a price or a budget is refused by the flags that
// give them, in plan and rank.
func TestCostNeedsPriceAndTokensFlags(t *testing.T) {
	for _, args := range [][]string{
		{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "16", "--seq", "4096", "--objective", "cost", "--price", "2"},
		{"rank", "--in", "-", "--objective", "cost", "--tokens", "1e12"},
	} {
		code, _, errOut := run(args...)
		if code != exitFailure || !strings.Contains(errOut, "--objective cost: needs --price (per GPU-hour) and --tokens (the budget to train) above 0") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
	// A price without a budget priced nothing (no cost column, cost_usd 0).
	for _, args := range [][]string{
		{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "16", "--seq", "4096", "--price", "2"},
		{"rank", "--in", "-", "--price", "2"},
	} {
		code, _, errOut := run(args...)
		if code != exitFailure || !strings.Contains(errOut, "--price 2: prices the token budget, and --tokens is 0") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
}

// load with no successful request says what the requests met (it gave only their
// count: "no successful request (100000 errors)" for a daemon not listening).
func TestLoadSaysTheError(t *testing.T) {
	f := t.TempDir() + "/plan.json"
	if err := os.WriteFile(f, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run("load", "--server", "127.0.0.1:1", "--in", f, "--requests", "3", "--concurrency", "1")
	if code != exitFailure || !strings.Contains(errOut, "no successful request (3 errors; the first: ") || !strings.Contains(errOut, "Unavailable") {
		t.Errorf("exit %d, stderr %q; want the first error", code, errOut)
	}
}

// The table of plans said nothing of what the search's answer warns of (a field
// without effect: the MoE imbalance of a dense model); --json carried it. The
// warnings every plan carries are printed under the table, by the flag when one
// gives the field.
func TestPlanPrintsTheSearchsWarnings(t *testing.T) {
	code, out, errOut := run("plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "16", "--seq", "4096", "--top", "2", "--moe-imbalance", "1.5")
	if code != 0 || !strings.Contains(out, "warning: --moe-imbalance: no effect") {
		t.Errorf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
}
