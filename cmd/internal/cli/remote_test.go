package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
	"github.com/stepcost/stepcost/server"
)

// daemon runs the service on loopback ports for the duration of the test, with
// the configuration changed by edit if any.
func daemon(t *testing.T, edit ...func(*server.Config)) string {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.WarmUp = nil // tests start at once
	cfg.GRPCAddr, cfg.HTTPAddr, cfg.ShutdownGrace = "127.0.0.1:0", "127.0.0.1:0", 5*time.Second
	for _, e := range edit {
		e(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, cfg, func(g, _ net.Addr) { addr <- g.String() })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	select {
	case a := <-addr:
		return a
	case err := <-done:
		t.Fatalf("daemon: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not start")
	}
	return ""
}

const configs = `{"model": {"name": "llama3-70b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 512}, "layout": {"tp": 8, "pp": 2, "dp": 4, "micro_batch": 1, "zero": 1, "sp": true, "recompute": "RECOMPUTE_FULL"}}
# a broken one: TP 3 does not divide 64 heads
{"model": {"name": "llama3-70b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 512}, "layout": {"tp": 3, "pp": 2, "dp": 4, "micro_batch": 1}}
{"model": {"name": "llama3-70b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 512}, "layout": {"tp": 8, "pp": 2, "dp": 4, "micro_batch": 1, "zero": 1, "sp": true, "recompute": "RECOMPUTE_SELECTIVE"}}
`

func TestRankInProcessAndRemote(t *testing.T) {
	f := filepath.Join(t.TempDir(), "c.jsonl")
	if err := os.WriteFile(f, []byte(configs), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := daemon(t)
	for _, remote := range []string{"", addr} {
		args := []string{"rank", "--in", f, "--format", "csv"}
		if remote != "" {
			args = append(args, "--server", remote)
		}
		// The broken config fails: the others are ranked and printed, and the
		// exit code says not every line was.
		code, out, errOut := run(args...)
		if code != 1 || !strings.Contains(errOut, "1 of 3 configs failed (line 3)") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if err != nil || len(rows) != 4 {
			t.Fatalf("csv %v: %q", err, out)
		}
		// selective (line 4) beats full recompute (line 1); the broken one (line 3) is last, unranked.
		if rows[0][1] != "line" || rows[1][0] != "1" || rows[1][1] != "4" || rows[2][1] != "1" || rows[3][0] != "0" || rows[3][1] != "3" || !strings.Contains(rows[3][15], "layout.tp") {
			t.Errorf("remote=%q: %v", remote, rows)
		}
	}
	code, out, _ := run("rank", "--in", f, "--format", "json", "--server", addr)
	var v pb.RankConfigsResponse
	// In request order, as the API answers: the first config (full recompute)
	// ranks second, the third (selective) first.
	if code != 1 || protojson.Unmarshal([]byte(out), &v) != nil || len(v.GetResults()) != 3 || v.GetResults()[0].GetRank() != 2 || v.GetResults()[2].GetRank() != 1 {
		t.Errorf("json: %d %s", code, out)
	}
	// The JSON's index counts config lines; the failed config's error names
	// its line in the file, as the table's and the CSV's line column do.
	if e := v.GetResults()[1].GetError(); !strings.HasPrefix(e.GetMessage(), "line 3: layout.tp") || e.GetViolations()[0].GetField() != "layout.tp" {
		t.Errorf("json: the failed config's error %v", e)
	}
	if code, out, _ := run("rank", "--in", f); code != 1 || !strings.Contains(out, "llama3-70b") {
		t.Errorf("table: %d %s", code, out)
	}
}

// A line that is not a config — not JSON, a typo in a field, longer than a
// request may be — is reported by its line number, and the rest of the file is
// still ranked; the exit code is 1.
func TestRankReportsBadLinesAndRanksTheRest(t *testing.T) {
	good := strings.SplitN(configs, "\n", 2)[0]
	file := strings.Join([]string{
		"# layouts",
		good,        // line 2
		"{not json", // line 3
		`{"model": {"name": "llama3-70b"}, "gpu": 8}`, // line 4: unknown field
		"",
		`{"pad": "` + strings.Repeat("x", maxConfigLine) + `"}`, // line 6: too long
		good, // line 7
	}, "\n")
	f := filepath.Join(t.TempDir(), "c.jsonl")
	if err := os.WriteFile(f, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run("rank", "--in", f, "--format", "csv")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, errOut)
	}
	if !strings.Contains(errOut, "3 of 5 configs failed (line 3, 4, 6)") {
		t.Errorf("stderr does not name the bad lines: %s", errOut)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 6 {
		t.Fatalf("csv %v: %q", err, out)
	}
	ranked := map[string]string{}
	for _, r := range rows[1:] {
		ranked[r[1]] = r[0] + " " + r[15]
	}
	if a, b := ranked["2"], ranked["7"]; !(a == "1 " && b == "2 " || a == "2 " && b == "1 ") {
		t.Errorf("the two good lines are not ranked 1 and 2: %q %q", a, b)
	}
	for line, want := range map[string]string{"3": "0 line 3: not an EstimateStepRequest", "4": "0 line 4: not an EstimateStepRequest", "6": "0 line 6: longer than"} {
		if got := ranked[line]; !strings.HasPrefix(got, want) {
			t.Errorf("line %s: got %q, want prefix %q", line, got, want)
		}
	}
	// The unknown field is named by its path in the request, as the REST
	// gateway names it, and no "line 1" contradicts the file's line 4.
	if got := ranked["4"]; !strings.Contains(got, `gpu: unknown field "gpu"`) || strings.Contains(got, "line 1:") {
		t.Errorf("line 4: got %q, want the unknown field named", got)
	}
	// Only bad lines: nothing to rank, each still reported, exit 1.
	if err := os.WriteFile(f, []byte("{\n[1]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run("rank", "--in", f); code != 1 || !strings.Contains(errOut, "2 of 2 configs failed (line 1, 2)") {
		t.Errorf("only bad lines: exit %d: %s", code, errOut)
	}
}

// Progress frames are drawn with carriage returns: they belong on a terminal,
// never in a redirected stderr.
func TestRankProgressOnlyOnATerminal(t *testing.T) {
	good := strings.SplitN(configs, "\n", 2)[0]
	f := filepath.Join(t.TempDir(), "c.jsonl")
	if err := os.WriteFile(f, []byte(strings.Repeat(good+"\n", rankBatch+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run("rank", "--in", f, "--format", "csv")
	if code != 0 || strings.Contains(errOut, "\r") || strings.Contains(errOut, "ranking") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is not a terminal")
	}
}

// The same command gives the same answer in process and from a daemon: the
// tables are printed from the API's response, and the JSON is that response.
func TestSameOutputInProcessAndRemote(t *testing.T) {
	f := filepath.Join(t.TempDir(), "c.jsonl")
	if err := os.WriteFile(f, []byte(configs), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := daemon(t)
	for _, args := range [][]string{
		{"estimate", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "64", "--tp", "8", "--pp", "2", "--mbs", "1", "--gbs", "512", "--seq", "8192", "--zero", "1", "--sp"},
		{"estimate", "--params", "13e9", "--cluster", "dgx-a100", "--gpus", "32", "--tp", "4", "--pp", "2", "--vpp", "2", "--gbs", "256", "--seq", "4096", "--recompute", "full"},
		{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--gbs", "64", "--seq", "8192", "--top", "3"},
		{"plan", "--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--max-gpus", "32", "--min-gpus", "16", "--gbs", "128", "--seq", "4096", "--objective", "cost", "--price", "2", "--tokens", "1e12"},
		{"collective", "--cluster", "dgx-h100", "--nodes", "2", "--op", "allgather", "--size", "256MiB"},
		{"collective", "--cluster", "dgx-h100", "--nodes", "4", "--gpus-per-node", "1", "--op", "reducescatter", "--size", "64MiB", "--algo", "pat", "--steps"},
		{"rank", "--in", f},
		{"rank", "--in", f, "--format", "csv"},
	} {
		for _, format := range [][]string{nil, {"--json"}} {
			a := append(append([]string(nil), args...), format...)
			if args[0] == "rank" && format != nil {
				if slices.Contains(args, "--format") {
					continue // --format csv: no JSON besides
				}
				a = append(append([]string(nil), args...), "--format", "json")
			}
			wantCode := 0
			if args[0] == "rank" {
				wantCode = 1 // the file has a broken config
			}
			code, local, errOut := run(a...)
			if code != wantCode {
				t.Fatalf("%v in process: exit %d: %s", a, code, errOut)
			}
			code, remote, errOut := run(append(a, "--server", addr)...)
			if code != wantCode {
				t.Fatalf("%v remote: exit %d: %s", a, code, errOut)
			}
			if format != nil {
				local, remote = withoutVolatile(t, args[0], local), withoutVolatile(t, args[0], remote)
			}
			if local != remote {
				t.Errorf("%v: in process and remote differ:\n%s\n---\n%s", a, local, remote)
			}
		}
	}
}

// withoutVolatile is a JSON answer, re-encoded, without what differs from call to
// call: the search's elapsed time and whether the answer came from the cache.
func withoutVolatile(t *testing.T, cmd, out string) string {
	t.Helper()
	var m proto.Message
	switch cmd {
	case "estimate":
		m = &pb.EstimateStepResponse{}
	case "plan":
		m = &pb.EstimatePlanResponse{}
	case "collective":
		m = &pb.SimulateCollectiveResponse{}
	case "rank":
		m = &pb.RankConfigsResponse{}
	}
	if err := protojson.Unmarshal([]byte(out), m); err != nil {
		t.Fatalf("%s: not the API's JSON: %v\n%s", cmd, err, out)
	}
	switch r := m.(type) {
	case *pb.EstimatePlanResponse:
		r.Stats.ElapsedMs, r.Cached = 0, false
	case *pb.EstimateStepResponse:
		r.Cached = false
	case *pb.SimulateCollectiveResponse:
		r.Cached = false
	}
	return prototext.Format(m)
}

func TestSubcommandsAgainstServer(t *testing.T) {
	addr := daemon(t)
	for _, args := range [][]string{
		{"estimate", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "64", "--tp", "8", "--pp", "2", "--mbs", "1", "--gbs", "512", "--seq", "8192", "--zero", "1", "--sp"},
		{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--gbs", "64", "--seq", "8192", "--top", "3"},
		{"collective", "--cluster", "dgx-h100", "--nodes", "2", "--op", "allgather", "--size", "256MiB"},
	} {
		code, local, errOut := run(append(args, "--json")...)
		if code != 0 {
			t.Fatalf("%v in process: %s", args, errOut)
		}
		code, remote, errOut := run(append(args, "--json", "--server", addr)...)
		if code != 0 {
			t.Fatalf("%v remote: %s", args, errOut)
		}
		if !json.Valid([]byte(local)) || !json.Valid([]byte(remote)) {
			t.Fatalf("%v: not JSON", args)
		}
		if code, out, errOut := run(append(args, "--server", addr)...); code != 0 || len(out) == 0 {
			t.Errorf("%v remote table: %d %s", args, code, errOut)
		}
	}
	if code, _, errOut := run("estimate", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "56", "--tp", "7", "--gbs", "512", "--seq", "8192", "--server", addr); code == 0 || !strings.Contains(errOut, "--tp: must divide") {
		t.Errorf("remote error not shown: %d %s", code, errOut)
	}
}

func TestLoad(t *testing.T) {
	addr := daemon(t)
	f := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(f, []byte(`{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 64}, "gpus": 16, "top_k": 2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run("load", "--server", addr, "--in", f, "--concurrency", "3", "--requests", "30")
	if code != 0 || !strings.Contains(out, "30 requests in") || !strings.Contains(out, "0 errors") || !strings.Contains(out, "p99") {
		t.Fatalf("load: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = run("load", "--server", addr, "--in", f, "--concurrency", "2", "--requests", "4", "--uncached")
	if code != 0 || !strings.Contains(out, "4 requests in") {
		t.Fatalf("uncached load: %d\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"load", "--in", f},
		{"load", "--server", addr, "--in", f, "--concurrency", "0"},
		{"load", "--server", addr, "--in", filepath.Join(t.TempDir(), "missing.json")},
	} {
		if code, _, errOut := run(args...); code == 0 || errOut == "" {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
	if err := os.WriteFile(f, []byte(`{"gpus": 16, "speed": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run("load", "--server", addr, "--in", f); code == 0 || !strings.Contains(errOut, "speed") {
		t.Errorf("unknown field: exit %d, %q", code, errOut)
	}
}

// A search that finds no feasible plan fails (exit 1, the reason on stderr), in
// process and against the daemon, as a table and as JSON; the search's counts still
// reach stdout.
func TestPlanWithoutFeasiblePlanFails(t *testing.T) {
	addr := daemon(t)
	base := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--gbs", "64", "--seq", "8192", "--min-headroom", "85"}
	for _, extra := range [][]string{nil, {"--json"}, {"--server", addr}, {"--json", "--server", addr}} {
		code, out, errOut := run(append(slices.Clone(base), extra...)...)
		if code != 1 || !strings.Contains(errOut, "no feasible plan") || len(out) == 0 {
			t.Errorf("%v: exit %d, stderr %q, %d bytes of output", extra, code, errOut, len(out))
		}
	}
}

// Excluded nodes on a catalog cluster sized to the job leave no plan, and the
// answer says why — in process and from the daemon, as text and JSON; with
// --nodes the cluster has room and the job is placed on the other nodes.
func TestExcludedNodesNeedACluster(t *testing.T) {
	addr := daemon(t)
	base := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "32", "--gbs", "64", "--seq", "8192", "--exclude-nodes", "1,2"}
	for _, extra := range [][]string{nil, {"--json"}, {"--server", addr}, {"--json", "--server", addr}} {
		code, out, errOut := run(append(slices.Clone(base), extra...)...)
		if code != 1 || !strings.Contains(errOut, "nodes 1, 2 excluded") || !strings.Contains(errOut, "--nodes") {
			t.Errorf("%v: exit %d, stderr %q", extra, code, errOut)
		}
		if slices.Contains(extra, "--json") && !strings.Contains(out, `"no_plan_reason"`) {
			t.Errorf("%v: the JSON answer gives no reason: %s", extra, out)
		}
	}
	for _, extra := range [][]string{nil, {"--server", addr}} {
		code, out, errOut := run(append(slices.Clone(base), append([]string{"--nodes", "6", "--json"}, extra...)...)...)
		var res pb.EstimatePlanResponse
		if code != 0 || protojson.Unmarshal([]byte(out), &res) != nil || len(res.GetPlans()) == 0 {
			t.Fatalf("--nodes 6 %v: exit %d: %s", extra, code, errOut)
		}
		for _, u := range res.GetPlans()[0].GetPlacement().GetNodes() {
			if u.GetNode() == 1 || u.GetNode() == 2 {
				t.Errorf("--nodes 6 %v: the plan uses excluded node %d", extra, u.GetNode())
			}
		}
	}
	if code, _, errOut := run(append(slices.Clone(base), "--nodes", "3")...); code == 0 || !strings.Contains(errOut, "--nodes") {
		t.Errorf("--nodes 3 for 32 GPUs: exit %d, %q", code, errOut)
	}
}

// plan takes what estimate and the API take: the model as an architecture (flags or
// a model file) and every constraint list; in process and against the daemon the
// plans honour them and agree.
func TestPlanArchitectureAndConstraintFlags(t *testing.T) {
	addr := daemon(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "model.json")
	if err := os.WriteFile(file, []byte(`{"name": "custom", "layers": 16, "hidden": 2048, "heads": 16, "kv_heads": 4, "ffn": 8192, "vocab": 32000, "gated_mlp": true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	common := []string{"--cluster", "dgx-h100", "--gpus", "16", "--gbs", "64", "--seq", "4096", "--top", "3", "--json",
		"--pp", "2", "--schedule", "interleaved", "--vpp", "2", "--sp", "off", "--tp", "1,2"}
	arch := []string{"plan", "--layers", "16", "--hidden", "2048", "--heads", "16", "--kv-heads", "4", "--ffn", "8192", "--vocab", "32000", "--gated"}
	for _, args := range [][]string{append(slices.Clone(arch), common...), append([]string{"plan", "--model-file", file}, common...)} {
		code, out, errOut := run(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args[:3], code, errOut)
		}
		var res pb.EstimatePlanResponse
		if err := protojson.Unmarshal([]byte(out), &res); err != nil || len(res.GetPlans()) == 0 {
			t.Fatalf("%v: %v (%d plans)", args[:3], err, len(res.GetPlans()))
		}
		for _, p := range res.GetPlans() {
			if l := p.GetLayout(); l.GetPp() != 2 || l.GetVirtualStages() != 2 || l.GetSp() || l.GetSchedule() != pb.Schedule_SCHEDULE_INTERLEAVED {
				t.Errorf("%v: constraint ignored: %v", args[:3], l)
			}
		}
	}
	code, remote, errOut := run(append(append(slices.Clone(arch), common...), "--server", addr)...)
	var rres struct {
		Plans []struct {
			Layout struct {
				Schedule      string `json:"schedule"`
				VirtualStages int    `json:"virtual_stages"`
			} `json:"layout"`
		} `json:"plans"`
	}
	if err := json.Unmarshal([]byte(remote), &rres); code != 0 || err != nil || len(rres.Plans) == 0 {
		t.Fatalf("remote: exit %d %s %v", code, errOut, err)
	}
	for _, p := range rres.Plans {
		if p.Layout.Schedule != "SCHEDULE_INTERLEAVED" || p.Layout.VirtualStages != 2 {
			t.Errorf("remote: constraint ignored: %+v", p.Layout)
		}
	}
}

// What-ifs from the command line: a slow GPU lengthens the step, in process and
// against the daemon alike; excluded nodes are not used.
func TestWhatIfFlags(t *testing.T) {
	addr := daemon(t)
	base := []string{"estimate", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "64", "--tp", "8", "--pp", "2", "--mbs", "1", "--gbs", "512", "--seq", "8192", "--zero", "1", "--sp", "--json"}
	step := func(args ...string) float64 {
		code, out, errOut := run(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", args[len(base):], code, errOut)
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if e, ok := r["estimate"].(map[string]any); ok { // the API's answer
			r = e
		}
		for _, k := range []string{"step_time_s", "StepTime", "step_time"} {
			if v, ok := r[k].(float64); ok {
				return v
			}
		}
		t.Fatalf("no step time in %.200s", out)
		return 0
	}
	normal := step(base...)
	slow := step(append(slices.Clone(base), "--slow-gpu", "0.8")...)
	remote := step(append(slices.Clone(base), "--slow-gpu", "0.8", "--server", addr)...)
	if !(slow > normal) || math.Abs(remote/slow-1) > 1e-9 {
		t.Errorf("step %.3f s, with a GPU at 80 %%: %.3f s in process, %.3f s remote", normal, slow, remote)
	}
	code, out, _ := run("plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--max-gpus", "32", "--gbs", "96", "--seq", "8192", "--top", "3", "--exclude-nodes", "2")
	if code != 0 || strings.Contains(out, "n2:") || !strings.Contains(out, "n3:") {
		t.Errorf("exclude node 2: exit %d\n%s", code, out)
	}
}

// The same layout on two GPU types reads as two rows a planner can tell apart:
// the table and the CSV name each row's cluster, and under --objective cost
// show the cost ranked by, not only the step time.
func TestRankNamesClusterAndCost(t *testing.T) {
	line := `{"model": {"name": "llama3-8b"}, "cluster": {"name": "%s"}, "training": {"seq_len": 8192, "global_batch": 256}, "layout": {"tp": 2, "pp": 1, "dp": 8, "micro_batch": 1, "zero": 1}}`
	f := filepath.Join(t.TempDir(), "c.jsonl")
	if err := os.WriteFile(f, []byte(fmt.Sprintf(line+"\n"+line+"\n", "dgx-h100", "hgx-b200")), 0o600); err != nil {
		t.Fatal(err)
	}
	cost := []string{"--objective", "cost", "--price", "2.5", "--tokens", "1e12"}
	code, out, errOut := run(append([]string{"rank", "--in", f, "--wide"}, cost...)...)
	if code != 0 || !strings.Contains(out, "dgx-h100") || !strings.Contains(out, "hgx-b200") || !strings.Contains(out, "cost") || !strings.Contains(out, "$") {
		t.Errorf("table: exit %d, %s\n%s", code, errOut, out)
	}
	code, out, errOut = run(append([]string{"rank", "--in", f, "--format", "csv"}, cost...)...)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != 0 || err != nil || len(rows) != 3 {
		t.Fatalf("csv: exit %d, %v, %s\n%s", code, err, errOut, out)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, r := range rows[1:] {
		gpus, _ := strconv.Atoi(r[col["gpus"]])
		score, _ := strconv.ParseFloat(r[col["score"]], 64)
		// 1e12 tokens in steps of 256 × 8192, 16 GPUs at $2.5 an hour.
		step, _ := strconv.ParseFloat(r[col["step_time_s"]], 64)
		want := 1e12 / (256 * 8192) * step / 3600 * 16 * 2.5
		if gpus != 16 || math.Abs(score-want) > 1e-6*want {
			t.Errorf("row %v: gpus %d, score %v, want %v", r, gpus, score, want)
		}
	}
	if got := []string{rows[1][col["cluster"]], rows[2][col["cluster"]]}; !slices.Contains(got, "dgx-h100") || !slices.Contains(got, "hgx-b200") {
		t.Errorf("clusters %v", got)
	}
}

// A config given twice is ranked twice, nothing dropped, and the table says
// which line it repeats (a file concatenated from two sweeps, a line pasted
// twice): the two rows are otherwise indistinguishable.
func TestRankNotesRepeatedConfigs(t *testing.T) {
	good := strings.SplitN(configs, "\n", 2)[0]
	// The same config with its fields in another order and spacing.
	same := `{"layout": {"micro_batch": 1, "zero": 1, "tp": 8, "pp": 2, "dp": 4, "sp": true, "recompute": "RECOMPUTE_FULL"}, "training": {"global_batch": 512, "seq_len": 8192}, "cluster": {"name": "dgx-h100"}, "model": {"name": "llama3-70b"}}`
	f := filepath.Join(t.TempDir(), "c.jsonl")
	if err := os.WriteFile(f, []byte(good+"\n"+good+"\n# again\n"+same+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run("rank", "--in", f, "--wide")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := map[string]string{} // file line → row
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[0] != "rank" {
			rows[f[1]] = l
		}
	}
	if len(rows) != 3 || strings.Contains(rows["1"], "same as") || !strings.Contains(rows["2"], "same as line 1") || !strings.Contains(rows["4"], "same as line 1") {
		t.Errorf("rows by file line %q:\n%s", rows, out)
	}
}

// A file that is not text (a binary given to --in by mistake) is reported line by
// line in every format, and the summary stays short: --format json failed whole
// ("proto: field stepcost.v1.ItemError.message contains invalid UTF-8", nothing
// on standard output) because a line's error echoed its bytes, and the table's
// summary listed every failed line (101 668 numbers, 654 KB of stderr for the
// stepcost binary).
func TestRankBinaryFileIsReportedBounded(t *testing.T) {
	f := filepath.Join(t.TempDir(), "bin.jsonl")
	var b bytes.Buffer
	for i := 0; i < 500; i++ {
		b.WriteString("\xff\xfe\x00\x1b[2J\x7f\n")
	}
	if err := os.WriteFile(f, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"json", "table", "csv"} {
		code, out, errOut := run("rank", "--in", f, "--format", format)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1: %.300s", format, code, errOut)
		}
		if !utf8.ValidString(out) || !utf8.ValidString(errOut) || strings.Contains(out+errOut, "\x1b") {
			t.Errorf("%s: output that is not text, or a terminal escape, echoed: %q", format, errOut[:min(len(errOut), 300)])
		}
		if !strings.Contains(errOut, "500 of 500 configs failed (line 1, 2, 3,") || len(errOut) > 400 {
			t.Errorf("%s: summary %d B: %.400s", format, len(errOut), errOut)
		}
		if format == "json" {
			var resp struct {
				Results []struct {
					Error struct{ Message string } `json:"error"`
				} `json:"results"`
			}
			if err := json.Unmarshal([]byte(out), &resp); err != nil || len(resp.Results) != 500 {
				t.Fatalf("json: %v, %d results: %.300s", err, len(resp.Results), out)
			}
			if m := resp.Results[0].Error.Message; !strings.HasPrefix(m, "line 1: not an EstimateStepRequest") {
				t.Errorf("json: line 1: %q", m)
			}
		}
	}
}

// A load flag out of range is named with its value: one message listed the three
// ranges whichever was at fault ("--concurrency 1–1024, --duration up to 1h,
// --requests ≥ 1" for --duration -1s).
func TestLoadNamesTheFlagOutOfRange(t *testing.T) {
	f := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(f, []byte(`{"gpus": 16}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ flag, value, want string }{
		{"--concurrency", "0", "--concurrency: must be between 1 and 1024 (got 0)"},
		{"--concurrency", "100000", "--concurrency: must be between 1 and 1024 (got 100000)"},
		{"--duration", "-1s", "--duration: must be more than 0 and at most 1h0m0s (got -1s)"},
		{"--duration", "2h", "--duration: must be more than 0 and at most 1h0m0s (got 2h0m0s)"},
		{"--requests", "0", "--requests: must be at least 1 (got 0)"},
	} {
		code, _, errOut := run("load", "--server", "127.0.0.1:1", "--in", f, tc.flag, tc.value)
		if code != 1 || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "--") != 1 {
			t.Errorf("%s %s: exit %d, %q, want %q alone", tc.flag, tc.value, code, errOut, tc.want)
		}
	}
}

// A refusal by the daemon names the flags typed, as the same refusal in process
// does: against --server it was the API's field behind gRPC's "rpc error: code =
// InvalidArgument desc = constraints.schedules[0]: …".
func TestRemoteRefusalNamesTheFlag(t *testing.T) {
	addr := daemon(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--gbs", "64", "--seq", "4096", "--schedule", "dualpipe"},
			"--schedule: asks for dualpipe, but megatron-core runs 1f1b or interleaved"},
		{[]string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--gbs", "64", "--seq", "4096", "--offload", "params", "--zero", "1"},
			"--offload: keeps the parameters in host memory"},
		{[]string{"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--tp", "2", "--pp", "4", "--mbs", "1", "--gbs", "64",
			"--seq", "4096", "--schedule", "dualpipe"}, "--schedule: megatron-core runs 1f1b or interleaved (got dualpipe)"},
		{[]string{"estimate", "--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--gpus", "64", "--tp", "2", "--pp", "4", "--mbs", "1", "--gbs", "256",
			"--seq", "4096", "--ep", "8", "--etp", "1"}, "--etp: with etp 1 < tp"},
	} {
		_, _, local := run(c.args...)
		code, _, remote := run(append(c.args, "--server", addr)...)
		if code != 1 || !strings.Contains(remote, c.want) || strings.Contains(remote, "rpc error") {
			t.Errorf("%s against the daemon: exit %d, %q; want %q as in process (%q)", c.args[0], code, remote, c.want, local)
		}
		if !strings.Contains(local, c.want) {
			t.Errorf("%s in process: %q, want %q", c.args[0], local, c.want)
		}
	}
}
