package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// startDaemon builds the real binary, starts it on loopback ports chosen by the
// kernel and returns the addresses it reports.
func startDaemon(t *testing.T, extra ...string) (cmd *exec.Cmd, grpcAddr, httpAddr string, stderr *safeBuffer) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stepcostd")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("build: %v", err)
	}
	cmd = exec.Command(bin, append([]string{"--warm-up=none", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, extra...)...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	stderr = &safeBuffer{}
	addrs := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		re := regexp.MustCompile(`msg=serving grpc=(\S+) http=(\S+)`)
		for sc.Scan() {
			stderr.add(sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addrs <- [2]string{m[1], m[2]}
			}
		}
	}()
	select {
	case a := <-addrs:
		return cmd, a[0], a[1], stderr
	case <-time.After(60 * time.Second):
		t.Fatalf("daemon did not start: %s", stderr.String())
	}
	return
}

// safeBuffer holds the daemon's log lines: the goroutine reading its standard
// error adds them while the test reads them.
type safeBuffer struct {
	mu  sync.Mutex
	all []string
}

func (b *safeBuffer) add(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.all = append(b.all, s)
}

func (b *safeBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.all, "\n")
}

// readmeCommands extracts the curl and grpcurl lines of the README's quick start.
func readmeCommands(t *testing.T) (curls, grpcurls []string) {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(l, "curl -s"):
			curls = append(curls, l)
		case strings.HasPrefix(l, "grpcurl -plaintext"):
			grpcurls = append(grpcurls, l)
		}
	}
	if len(curls) < 4 || len(grpcurls) < 2 {
		t.Fatalf("README has %d curl and %d grpcurl examples", len(curls), len(grpcurls))
	}
	return curls, grpcurls
}

var bodyRE = regexp.MustCompile(`-d '([^']*)'`)

// TestREADMEOverRESTAndGRPC runs the README's requests verbatim against the real
// binary, checks the answers, and stops it with SIGTERM.
func TestREADMEOverRESTAndGRPC(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	cmd, grpcAddr, httpAddr, stderr := startDaemon(t)
	curls, grpcurls := readmeCommands(t)

	for _, c := range curls {
		method := http.MethodGet
		if strings.Contains(c, "-X POST") {
			method = http.MethodPost
		}
		m := regexp.MustCompile(`localhost:8080(\S*)`).FindStringSubmatch(c)
		if m == nil {
			t.Fatalf("no URL in %q", c)
		}
		var body io.Reader
		if b := bodyRE.FindStringSubmatch(c); b != nil {
			body = strings.NewReader(b[1])
		}
		req, _ := http.NewRequest(method, "http://"+httpAddr+m[1], body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: HTTP %d %s", m[1], resp.StatusCode, out)
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%s: not JSON: %s", m[1], out)
		}
		want := map[string]string{"/healthz": "status", "/v1/plans:estimate": "plans", "/v1/steps:estimate": "estimate",
			"/v1/collectives:simulate": "chosen", "/v1/catalog": "systems"}[m[1]]
		if _, ok := v[want]; !ok || want == "" {
			t.Errorf("%s: answer lacks %q: %.300s", m[1], want, out)
		}
		t.Logf("REST %s %s: %d bytes", method, m[1], len(out))
	}

	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, c := range grpcurls {
		fields := strings.Fields(c)
		full := fields[len(fields)-1]
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if full == "grpc.health.v1.Health/Check" {
			r, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
			cancel()
			if err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("health: %v %v", r, err)
			}
			continue
		}
		var req, resp proto.Message
		switch full {
		case "stepcost.v1.StepcostService/EstimatePlan":
			req, resp = &pb.EstimatePlanRequest{}, &pb.EstimatePlanResponse{}
		case "stepcost.v1.StepcostService/SimulateCollective":
			req, resp = &pb.SimulateCollectiveRequest{}, &pb.SimulateCollectiveResponse{}
		case "stepcost.v1.StepcostService/EstimateStep":
			req, resp = &pb.EstimateStepRequest{}, &pb.EstimateStepResponse{}
		default:
			t.Fatalf("unexpected method %s", full)
		}
		if err := protojson.Unmarshal([]byte(bodyRE.FindStringSubmatch(c)[1]), req); err != nil {
			t.Fatalf("%s body: %v", full, err)
		}
		err := conn.Invoke(ctx, "/"+full, req, resp)
		// The response cache admits entries asynchronously, so the plan the REST call
		// computed may land a moment later: ask again for up to about five seconds.
		for i := 0; err == nil && i < 500; i++ {
			if r, ok := resp.(*pb.EstimatePlanResponse); !ok || r.GetCached() {
				break
			}
			time.Sleep(10 * time.Millisecond)
			err = conn.Invoke(ctx, "/"+full, req, resp)
		}
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", full, err)
		}
		switch r := resp.(type) {
		case *pb.EstimatePlanResponse:
			if len(r.GetPlans()) != 3 || !r.GetCached() { // the REST call before computed it
				t.Errorf("EstimatePlan: %d plans, cached %v", len(r.GetPlans()), r.GetCached())
			}
		case *pb.SimulateCollectiveResponse:
			if r.GetChosen().GetTimeUs() <= 0 || r.GetRanks() != 32 {
				t.Errorf("SimulateCollective: %v", r.GetChosen())
			}
		}
		t.Logf("gRPC %s ok", full)
	}

	// SIGTERM: the daemon shuts down cleanly and exits 0.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not exit within 30 s of SIGTERM")
	}
	if !strings.Contains(stderr.String(), "shutting down") {
		t.Errorf("no shutdown log:\n%s", stderr.String())
	}
}

// Unknown JSON fields are a 400 naming the field: strict decoding.
func TestStrictJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	_, _, httpAddr, _ := startDaemon(t)
	resp, err := http.Post("http://"+httpAddr+"/v1/steps:estimate", "application/json", strings.NewReader(`{"model": {"name": "llama3-8b"}, "gpu": 8}`))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(out), `unknown field \"gpu\"`) {
		t.Errorf("HTTP %d %s", resp.StatusCode, out)
	}
	resp, err = http.Get("http://" + httpAddr + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	out, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), "/v1/plans:estimate") {
		t.Errorf("openapi: HTTP %d", resp.StatusCode)
	}
}

// The workloads and what-ifs over REST: ZB-V, expert tensor parallelism, parameter
// offload, a degraded NIC, and a failed node in a plan.
func TestWorkloadsOverREST(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	_, _, httpAddr, _ := startDaemon(t)
	post := func(path, body string) map[string]any {
		t.Helper()
		resp, err := http.Post("http://"+httpAddr+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: HTTP %d %s", path, resp.StatusCode, out)
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	est := func(m map[string]any) map[string]any { return m["estimate"].(map[string]any) }
	zbv := post("/v1/steps:estimate", `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100", "nodes": 8},
		"training": {"seq_len": 4096, "global_batch": 64, "framework": "torchtitan"},
		"layout": {"tp": 1, "pp": 8, "dp": 8, "micro_batch": 1, "zero": 1, "schedule": "SCHEDULE_ZB_V"}, "degraded_nic_speed": 0.5}`)
	if l := est(zbv)["layout"].(map[string]any); l["virtual_stages"] != float64(2) {
		t.Errorf("zb-v layout %v", l)
	}
	if !strings.Contains(fmt.Sprint(est(zbv)["assumptions"]), "NICs at 50%") {
		t.Error("the degraded NIC is not in the assumptions")
	}
	off := post("/v1/steps:estimate", `{"model": {"name": "llama3-70b"}, "cluster": {"name": "dgx-h100", "nodes": 1},
		"training": {"seq_len": 4096, "global_batch": 16},
		"layout": {"tp": 1, "dp": 8, "zero": 3, "micro_batch": 1, "recompute": "RECOMPUTE_FULL", "offload": "params"}}`)
	if m := est(off)["memory"].(map[string]any); m["fits"] != true || !(m["host_gb"].(float64) > 0) {
		t.Errorf("offloaded memory %v", m)
	}
	etp := post("/v1/steps:estimate", `{"model": {"name": "mixtral-8x7b"}, "cluster": {"name": "dgx-h100", "nodes": 2},
		"training": {"seq_len": 4096, "global_batch": 64},
		"layout": {"tp": 2, "dp": 8, "ep": 8, "sp": true, "etp": 1, "micro_batch": 1, "zero": 1}}`)
	if l := est(etp)["layout"].(map[string]any); l["etp"] != float64(1) {
		t.Errorf("etp layout %v", l)
	}
	// A fine-grained MoE architecture with shared experts, a dense first layer, MLA
	// and a busy router rank capped by a capacity factor, on DualPipe (HAI-LLM's).
	moe := post("/v1/steps:estimate", `{"model": {"architecture": {"name": "moe-rest", "layers": 16, "hidden": 2048, "heads": 16,
			"ffn": 8192, "gated_mlp": true, "vocab": 32000,
			"moe": {"experts": 64, "top_k": 6, "expert_ffn": 1024, "shared_experts": 2, "first_dense": 1},
			"mla": {"q_lora_rank": 768, "kv_lora_rank": 256, "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "v_head_dim": 64}}},
		"cluster": {"name": "dgx-h100", "nodes": 2},
		"training": {"seq_len": 4096, "global_batch": 64, "moe_imbalance": 1.5, "moe_capacity_factor": 1.25, "framework": "hai-llm"},
		"layout": {"pp": 2, "dp": 8, "ep": 8, "micro_batch": 1, "zero": 1, "schedule": "SCHEDULE_DUALPIPE"}}`)
	if m := moe["model"].(map[string]any); fmt.Sprint(m["moe"]) != "map[bias:false expert_ffn:1024 experts:64 first_dense:1 frequency:1 groups:0 shared_experts:2 top_k:6 topk_groups:0]" ||
		m["mla"].(map[string]any)["kv_lora_rank"] != float64(256) {
		t.Errorf("the MoE architecture came back as %v", m)
	}
	if tr := est(moe)["training"].(map[string]any); tr["moe_capacity_factor"] != 1.25 || tr["moe_imbalance"] != 1.5 {
		t.Errorf("the MoE training settings came back as %v", tr)
	}
	plan := post("/v1/plans:estimate", `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100", "nodes": 4},
		"training": {"seq_len": 8192, "global_batch": 48}, "gpus": 24, "top_k": 3, "exclude_nodes": [2]}`)
	plans, _ := plan["plans"].([]any)
	if len(plans) == 0 {
		t.Fatalf("no plan on the 3 nodes left: %v", plan)
	}
	for _, p := range plans {
		for _, u := range p.(map[string]any)["placement"].(map[string]any)["nodes"].([]any) {
			if n, _ := u.(map[string]any)["node"].(float64); n == 2 {
				t.Errorf("a plan uses the excluded node 2: %v", p)
			}
		}
	}
	// A degraded node named over REST: the plans on the other three nodes say they
	// avoided it.
	plan = post("/v1/plans:estimate", `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100", "nodes": 4},
		"training": {"seq_len": 8192, "global_batch": 48}, "gpus": 24, "top_k": 3,
		"degraded_nodes": [{"node": 2, "nic_speed": 0.25, "gpu_speed": 0.9}]}`)
	plans, _ = plan["plans"].([]any)
	if len(plans) == 0 {
		t.Fatalf("no plan beside the degraded node 2: %v", plan)
	}
	for _, p := range plans {
		pl := p.(map[string]any)["placement"].(map[string]any)
		if fmt.Sprint(pl["degraded_nodes_avoided"]) != "[2]" || fmt.Sprint(pl["degraded_nodes_used"]) != "[]" {
			t.Errorf("a plan beside the degraded node 2 says used %v, avoided %v", pl["degraded_nodes_used"], pl["degraded_nodes_avoided"])
		}
	}
}

// The daemon searches its warm-up clusters before it reports SERVING and says so.
func TestWarmUpBeforeServing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	_, _, _, stderr := startDaemon(t, "--warm-up", "dgx-h100:64")
	log := stderr.String()
	w, s := strings.Index(log, "msg=\"warmed up\""), strings.Index(log, "msg=serving")
	if w < 0 || s < 0 || w > s || !strings.Contains(log, "targets=1") {
		t.Errorf("want the warm-up logged before serving:\n%s", log)
	}
}
