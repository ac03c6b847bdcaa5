package cli

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// printedNear checks a number as a table prints it against the JSON's: equal to
// within half the last printed digit. unit is the printed unit in the JSON's
// (1e-3 for ms of a value in seconds).
func printedNear(t *testing.T, what, printed string, unit, want float64) {
	t.Helper()
	num := strings.TrimFunc(printed, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.' || r == '-') })
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		t.Errorf("%s: %q is not a number", what, printed)
		return
	}
	decimals := 0
	if i := strings.IndexByte(num, '.'); i >= 0 {
		decimals = len(num) - i - 1
	}
	if tol := 0.5 * math.Pow(10, -float64(decimals)) * unit * (1 + 1e-9); math.Abs(v*unit-want) > tol {
		t.Errorf("%s: the table says %s, the JSON %g", what, printed, want)
	}
}

// seconds is the unit of a printed duration, in seconds.
func seconds(printed string) float64 {
	switch {
	case strings.HasSuffix(printed, " ms"):
		return 1e-3
	case strings.HasSuffix(printed, " µs"):
		return 1e-6
	case strings.HasSuffix(printed, " min"):
		return 60
	case strings.HasSuffix(printed, " h"):
		return 3600
	case strings.HasSuffix(printed, " days"):
		return 86400
	}
	return 1
}

// path is the number at a JSON path of m ("estimate.breakdown.forward_s").
func path(t *testing.T, m map[string]any, p string) float64 {
	t.Helper()
	var v any = m
	for _, k := range strings.Split(p, ".") {
		o, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: no object at %s", p, k)
		}
		v = o[k]
	}
	switch x := v.(type) {
	case float64:
		return x
	case string: // int64 fields
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			t.Fatalf("%s: %q", p, x)
		}
		return f
	case nil:
		return 0 // proto3: a zero is left out
	}
	t.Fatalf("%s: %T", p, v)
	return 0
}

// The estimate table says the numbers of its --json: step time, throughput, MFU,
// HFU, every row of the breakdown (the exposed and hidden communication of each
// kind), the memory line and each part of the memory; on one GPU, with PP as deep
// as the layers and one micro-batch, with ZeRO-3 and offload, fp8 MoE.
func TestEstimateTableSaysTheJSONNumbers(t *testing.T) {
	step := regexp.MustCompile(`(?m)^step time  (\S+ \S+)   tokens/s (\d+)   per GPU (\d+)   MFU ([\d.]+)%   HFU ([\d.]+)%$`)
	row := regexp.MustCompile(`(?m)^(forward|backward|recompute|exposed (\w+) comm|pipeline bubble|optimizer step|comm/compute contention|total) +([\d.]+ (?:s|ms|µs)) +([\d.]+)%(?: +([\d.]+ (?:s|ms|µs)))? *$`)
	mem := regexp.MustCompile(`(?m)^memory per GPU \(stage (\d+)\): ([\d.]+) of ([\d.]+) GB — (?:fits, ([\d.]+) GB headroom|DOES NOT FIT: ([\d.]+) GB over)$`)
	parts := map[string]string{"weights": "weights_gb", "gradients": "gradients_gb", "optimizer states": "optimizer_gb", "gathered weights (ZeRO-3)": "gathered_weights_gb",
		"embeddings / logits": "embeddings_logits_gb", "fp8 weight copies": "fp8_weight_copies_gb", "communication buffers": "comm_buffers_gb", "runtime reserve": "runtime_reserve_gb"}
	part := regexp.MustCompile(`(?m)^(weights|gradients|optimizer states|gathered weights \(ZeRO-3\)|activations \(([\d.e+]+) micro-batch(?:es)? in flight\)|embeddings / logits|fp8 weight copies|communication buffers|runtime reserve) +([\d.]+)$`)
	fields := map[string]string{"forward": "forward_s", "backward": "backward_s", "recompute": "recompute_s", "pipeline bubble": "bubble_s",
		"optimizer step": "optimizer_s", "comm/compute contention": "contention_s", "total": "total_s"}
	for _, args := range [][]string{
		{"--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "1", "--tp", "1", "--mbs", "1", "--gbs", "1", "--seq", "4096"},
		{"--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "32", "--tp", "1", "--pp", "32", "--mbs", "1", "--gbs", "1", "--seq", "4096"},
		{"--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "64", "--tp", "8", "--pp", "2", "--vpp", "2", "--sp", "--mbs", "1", "--gbs", "512", "--seq", "8192", "--recompute", "selective", "--zero", "1"},
		{"--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--tp", "1", "--zero", "3", "--mbs", "1", "--gbs", "16", "--seq", "4096", "--offload", "optimizer", "--framework", "fsdp"},
		{"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--gpus", "64", "--tp", "2", "--pp", "4", "--ep", "8", "--sp", "--mbs", "1", "--gbs", "256", "--seq", "4096", "--precision", "fp8"},
		{"--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "8", "--tp", "8", "--mbs", "4", "--gbs", "64", "--seq", "8192"}, // does not fit
	} {
		a := append([]string{"estimate", "--wide"}, args...)
		code, table, errOut := run(a...)
		if code != exitOK {
			t.Fatalf("%q: exit %d: %s", a, code, errOut)
		}
		code, js, errOut := run(append(a, "--json")...)
		if code != exitOK {
			t.Fatalf("%q --json: exit %d: %s", a, code, errOut)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(js), &m); err != nil {
			t.Fatal(err)
		}
		s := step.FindStringSubmatch(table)
		if s == nil {
			t.Fatalf("%q: no step time line:\n%s", a, table)
		}
		printedNear(t, "step time", s[1], seconds(s[1]), path(t, m, "estimate.step_time_s"))
		printedNear(t, "tokens/s", s[2], 1, path(t, m, "estimate.throughput.tokens_per_s"))
		printedNear(t, "tokens/s per GPU", s[3], 1, path(t, m, "estimate.throughput.tokens_per_s_per_gpu"))
		printedNear(t, "MFU", s[4], 0.01, path(t, m, "estimate.throughput.mfu"))
		printedNear(t, "HFU", s[5], 0.01, path(t, m, "estimate.throughput.hfu"))
		rows := row.FindAllStringSubmatch(table, -1)
		if len(rows) < 3 {
			t.Fatalf("%q: %d breakdown rows:\n%s", a, len(rows), table)
		}
		for _, r := range rows {
			exposed, hidden := "estimate.breakdown."+fields[r[1]], ""
			if r[2] != "" {
				exposed, hidden = "estimate.breakdown.exposed_comm_s."+r[2], "estimate.breakdown.hidden_comm_s."+r[2]
			}
			printedNear(t, r[1], r[3], seconds(r[3]), path(t, m, exposed))
			printedNear(t, r[1]+" share", r[4], 0.01, path(t, m, exposed)/path(t, m, "estimate.step_time_s"))
			if r[5] != "" {
				printedNear(t, r[1]+" hidden", r[5], seconds(r[5]), path(t, m, hidden))
			}
		}
		mm := mem.FindStringSubmatch(table)
		if mm == nil {
			t.Fatalf("%q: no memory line:\n%s", a, table)
		}
		printedNear(t, "memory stage", mm[1], 1, path(t, m, "estimate.memory.stage"))
		printedNear(t, "memory", mm[2], 1, path(t, m, "estimate.memory.total_gb"))
		printedNear(t, "capacity", mm[3], 1, path(t, m, "estimate.memory.capacity_gb"))
		if mm[4] != "" {
			printedNear(t, "headroom", mm[4], 1, path(t, m, "estimate.memory.headroom_gb"))
		} else {
			printedNear(t, "over", mm[5], 1, -path(t, m, "estimate.memory.headroom_gb"))
		}
		ps := part.FindAllStringSubmatch(table, -1)
		if len(ps) < 3 {
			t.Fatalf("%q: %d memory parts:\n%s", a, len(ps), table)
		}
		for _, p := range ps {
			field := parts[p[1]]
			if p[2] != "" {
				field = "activations_gb"
				printedNear(t, "micro-batches in flight", p[2], 1, path(t, m, "estimate.memory.in_flight_micro_batches"))
			}
			printedNear(t, p[1], p[3], 1, path(t, m, "estimate.memory."+field))
		}
	}
}

// The plan table's rows are the --json's plans, in order: GPUs, layout, step
// time, compute, exposed communication, bubble, memory, MFU, and under the cost
// objective the duration and the cost.
func TestPlanTableSaysTheJSONNumbers(t *testing.T) {
	for _, args := range [][]string{
		{"--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--gbs", "64", "--seq", "8192", "--top", "5"},
		{"--model", "llama3-8b", "--cluster", "dgx-h100", "--max-gpus", "16", "--gbs", "64", "--seq", "8192", "--top", "5", "--objective", "cost", "--price", "2", "--tokens", "1e12"},
		{"--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "32", "--pp", "32", "--gbs", "32", "--seq", "4096", "--top", "3"},
	} {
		a := append([]string{"plan", "--wide"}, args...)
		code, table, errOut := run(a...)
		if code != exitOK {
			t.Fatalf("%q: exit %d: %s", a, code, errOut)
		}
		code, js, errOut := run(append(a, "--json")...)
		if code != exitOK {
			t.Fatalf("%q --json: exit %d: %s", a, code, errOut)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(js), &m); err != nil {
			t.Fatal(err)
		}
		plans, _ := m["plans"].([]any)
		lines := strings.Split(table, "\n")
		head := -1
		for i, l := range lines {
			if strings.HasPrefix(l, "#  gpus") {
				head = i
				break
			}
		}
		if head < 0 || len(plans) == 0 {
			t.Fatalf("%q: no plan table or no plans:\n%s", a, table)
		}
		cols := regexp.MustCompile(`\S+(?: \S+)*`).FindAllString(lines[head], -1)
		col := map[string]int{}
		for i, c := range cols {
			col[c] = i
		}
		for i, p := range plans {
			pm := p.(map[string]any)
			cells := regexp.MustCompile(`\S+(?: \S+)*`).FindAllString(lines[head+1+i], -1)
			if len(cells) != len(cols) {
				t.Fatalf("%q row %d: %d cells, %d columns: %q", a, i+1, len(cells), len(cols), lines[head+1+i])
			}
			if cells[col["#"]] != strconv.Itoa(i+1) {
				t.Errorf("row %d numbered %s", i+1, cells[0])
			}
			printedNear(t, "gpus", cells[col["gpus"]], 1, path(t, pm, "estimate.gpus"))
			for name, field := range map[string]string{"step": "estimate.step_time_s", "bubble": "estimate.breakdown.bubble_s"} {
				printedNear(t, name, cells[col[name]], seconds(cells[col[name]]), path(t, pm, field))
			}
			used, capacity, _ := strings.Cut(cells[col["memory GB"]], "/")
			printedNear(t, "memory", used, 1, path(t, pm, "estimate.memory.total_gb"))
			printedNear(t, "capacity", capacity, 1, path(t, pm, "estimate.memory.capacity_gb"))
			printedNear(t, "MFU", cells[col["MFU"]], 0.01, path(t, pm, "estimate.throughput.mfu"))
			if c, ok := col["cost"]; ok {
				printedNear(t, "cost", cells[c], 1, path(t, pm, "cost_usd"))
			}
		}
	}
}

// One micro-batch in flight, and one GPU, are said in the singular: the table
// said "activations (1 micro-batches in flight)" and "custom on 1 GPUs of
// dgx-h100".
func TestEstimateTableOneMicroBatchInFlight(t *testing.T) {
	for _, c := range []struct {
		pp   string
		want string
	}{{"1", "activations (1 micro-batch in flight)"}, {"2", "activations (2 micro-batches in flight)"}} {
		code, out, errOut := run("estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--pp", c.pp, "--mbs", "1", "--gbs", "64", "--seq", "4096")
		if code != exitOK || !strings.Contains(out, c.want) {
			t.Errorf("pp %s: exit %d, %s%s; want %q", c.pp, code, out, errOut, c.want)
		}
	}
	code, out, errOut := run("estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "1", "--mbs", "1", "--gbs", "1", "--seq", "4096")
	if code != exitOK || !strings.HasPrefix(out, "llama3-8b on 1 GPU of dgx-h100:") {
		t.Errorf("one GPU: exit %d, %.200s%s", code, out, errOut)
	}
}
