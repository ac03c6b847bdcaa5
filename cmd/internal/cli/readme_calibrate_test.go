package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeBlock is the sh block of README.md under the heading, its lines in order
// (continuations joined).
func readmeBlock(t *testing.T, heading string) []string {
	t.Helper()
	data, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no heading %q", heading)
	}
	if next := strings.Index(after, "\n## "); next >= 0 {
		after = after[:next]
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatalf("README.md, %s: no sh block", heading)
	}
	block, _, _ = strings.Cut(block, "```")
	var lines []string
	cur := ""
	for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
		cur += " " + strings.TrimSuffix(strings.TrimSpace(l), "\\")
		if strings.HasSuffix(strings.TrimSpace(l), "\\") {
			continue
		}
		lines = append(lines, strings.TrimSpace(cur))
		cur = ""
	}
	return lines
}

// stepcostArgs are a documented stepcost command line's arguments after the
// command's name (go run ./cmd/stepcost or stepcost).
func stepcostArgs(t *testing.T, line string) []string {
	t.Helper()
	words := shellWords(line)
	for i, w := range words {
		if w == "stepcost" || strings.HasSuffix(w, "/cmd/stepcost") {
			return words[i+1:]
		}
	}
	t.Fatalf("%q runs no stepcost", line)
	return nil
}

// The README's "Calibrate to your own cluster" chain runs as written: the block's
// nccl-tests run (all_reduce_perf on 2 nodes × 8 GPUs, one GPU per process, into
// a file), then its calibrate line on that file, then its plan line on the
// cluster file calibrate wrote. The run is stood in for by the 2-node H100
// all_reduce_perf output of NVIDIA/nccl-tests#290 (estimator/calibrate/testdata/
// h100-ib-ndr/ncclt290-auto.txt: 16 ranks on two hosts, nGpus 1), with the line
// nccl-tests 2.17 and later print naming the binary the README runs
// ("Collective test starting: all_reduce_perf", as in b200-ib/dstack-lambda-
// allreduce.txt; the older nccl-tests printed none). The plan must run
// on the fitted file — its name in the plan's heading — and price differently
// from the same plan line on the catalog cluster the file was fitted from: the
// fitted constants moved the estimate. Editing the block (a flag renamed, a file
// name changed in one line and not the other) fails here.
func TestReadmeCalibrateThenPlan(t *testing.T) {
	lines := readmeBlock(t, "## Calibrate to your own cluster")
	if len(lines) != 3 {
		t.Fatalf("README's calibrate block: %d lines, want the nccl-tests run, calibrate and plan: %q", len(lines), lines)
	}
	run, cal, plan := lines[0], lines[1], lines[2]
	m := regexp.MustCompile(`-np (\d+) -N (\d+) \S*/(\w+_perf) .*-g 1 > (\S+)$`).FindStringSubmatch(run)
	if m == nil || m[1] != "16" || m[2] != "8" || m[3] != "all_reduce_perf" {
		t.Fatalf("README's nccl-tests run %q: the test stands in a 2-node × 8 all_reduce_perf output (one GPU a process) for it", run)
	}
	output := m[4]
	data, err := os.ReadFile("../../../estimator/calibrate/testdata/h100-ib-ndr/ncclt290-auto.txt")
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(string(data), "\n")
	data = []byte(first + "\n 0: # Collective test starting: " + m[3] + "\n" + rest)
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile(output, data, 0o644); err != nil {
		t.Fatal(err)
	}

	calArgs := stepcostArgs(t, cal)
	if calArgs[0] != "calibrate" || !slices.Contains(calArgs, output) {
		t.Fatalf("README's calibrate line %q does not calibrate the run's output %s", cal, output)
	}
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), calArgs, &stdout, &stderr); code != exitOK {
		t.Fatalf("%q exits %d: %s", cal, code, stderr.String())
	}
	i := slices.Index(calArgs, "--out")
	if i < 0 || i+1 >= len(calArgs) {
		t.Fatalf("README's calibrate line %q writes no cluster file (--out)", cal)
	}
	fitted, err := os.ReadFile(filepath.Join(dir, calArgs[i+1]))
	if err != nil {
		t.Fatalf("%q: %v", cal, err)
	}
	name := regexp.MustCompile(`(?m)^name: (\S+)$`).FindSubmatch(fitted)
	if name == nil {
		t.Fatalf("the fitted file names no cluster:\n%s", fitted)
	}
	if !strings.Contains(string(fitted), "(base ") {
		t.Fatalf("the fitted file states no fitted constant:\n%s", fitted)
	}

	planArgs := stepcostArgs(t, plan)
	j := slices.Index(planArgs, "--cluster-file")
	if planArgs[0] != "plan" || j < 0 || j+1 >= len(planArgs) || planArgs[j+1] != calArgs[i+1] {
		t.Fatalf("README's plan line %q does not plan on the file calibrate writes, %s", plan, calArgs[i+1])
	}
	stdout.Reset()
	stderr.Reset()
	if code := Run(context.Background(), planArgs, &stdout, &stderr); code != exitOK {
		t.Fatalf("%q exits %d: %s", plan, code, stderr.String())
	}
	onFitted := stdout.String()
	if !strings.Contains(onFitted, " on "+string(name[1])+":") {
		t.Errorf("%q does not plan on the fitted cluster %s:\n%s", plan, name[1], onFitted)
	}
	// The same plan on the catalog cluster calibrate started from: below the
	// heading (which names the cluster), another answer.
	k := slices.Index(calArgs, "--cluster")
	if k < 0 {
		t.Fatalf("README's calibrate line %q names no base cluster", cal)
	}
	base := slices.Clone(planArgs)
	base[j], base[j+1] = "--cluster", calArgs[k+1]
	stdout.Reset()
	if code := Run(context.Background(), base, &stdout, &stderr); code != exitOK {
		t.Fatalf("%q exits %d: %s", base, code, stderr.String())
	}
	_, fittedRows, _ := strings.Cut(onFitted, "\n")
	_, baseRows, _ := strings.Cut(stdout.String(), "\n")
	if fittedRows == baseRows || !strings.Contains(stdout.String(), " on "+calArgs[k+1]+":") {
		t.Errorf("the plan on the fitted file prices as on %s, the file's constants unused:\n%s", calArgs[k+1], onFitted)
	}
}
