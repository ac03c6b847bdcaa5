package main_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// pythonClient is the Python interpreter the client is tested with, and the
// PYTHONPATH that makes the package importable from the source tree.
type pythonClient struct {
	python, srcDir, dir string
}

// requirePython finds a python3 with grpcio and protobuf: /usr/bin/python3 (Debian's,
// where python3-grpcio and python3-protobuf install; a pyenv python3 first on PATH
// would not see them) or $STEPCOST_PYTHON. Without one the test is skipped, unless
// STEPCOST_REQUIRE_PYTHON is set (CI sets it), so that a missing dependency cannot
// turn the test into a silent pass there.
func requirePython(t *testing.T) pythonClient {
	t.Helper()
	python := os.Getenv("STEPCOST_PYTHON")
	if python == "" {
		python = "/usr/bin/python3"
	}
	dir, err := filepath.Abs("../../clients/python")
	if err != nil {
		t.Fatal(err)
	}
	pc := pythonClient{python: python, srcDir: filepath.Join(dir, "src"), dir: dir}
	out, err := pc.command(context.Background(), "-c", "import grpc, google.protobuf; print(grpc.__version__, google.protobuf.__version__)").CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("%s with grpc and protobuf is needed (apt-get install python3-grpcio python3-protobuf, or STEPCOST_PYTHON): %v\n%s", python, err, out)
		if os.Getenv("STEPCOST_REQUIRE_PYTHON") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Logf("%s: grpcio, protobuf %s", python, strings.TrimSpace(string(out)))
	return pc
}

func (pc pythonClient) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, pc.python, args...)
	// No bytecode files in the source tree; the package from the tree, not an
	// installed copy that may be older.
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pc.srcDir, "PYTHONDONTWRITEBYTECODE=1", "STEPCOST_TOKEN=")
	return cmd
}

// run runs a Python program and returns its standard output, standard error and
// exit code.
func (pc pythonClient) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var o, e bytes.Buffer
	cmd := pc.command(ctx, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// TestPythonClient runs the Python client's example against the real daemon and
// checks that it prints the plan a Go client gets for the same request, field for
// field; and runs the client's unit tests. The generated Python code being
// current with the .proto is scripts/gen-python --check's job (CI).
func TestPythonClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	pc := requirePython(t)
	t.Run("unit", func(t *testing.T) {
		stdout, stderr, code := pc.run(t, "-m", "unittest", "discover", "-s", filepath.Join(pc.dir, "tests"))
		if code != 0 {
			t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
		}
	})

	p := launch(t, nil)
	conn, err := grpc.NewClient(p.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The example's request: its defaults.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := pb.NewStepcostServiceClient(conn).EstimatePlan(ctx, &pb.EstimatePlanRequest{
		Model:    &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
		Training: &pb.Training{SeqLen: 8192, GlobalBatch: 256},
		Gpus:     32,
		TopK:     1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetPlans()) == 0 {
		t.Fatal("the daemon found no plan")
	}
	want := resp.GetPlans()[0]
	example := filepath.Join(pc.dir, "examples", "best_plan.py")

	t.Run("json", func(t *testing.T) {
		stdout, stderr, code := pc.run(t, example, "--server", p.grpcAddr, "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		got := &pb.Plan{}
		if err := protojson.Unmarshal([]byte(stdout), got); err != nil {
			t.Fatalf("output is not a Plan: %v\n%s", err, stdout)
		}
		if !proto.Equal(got, want) {
			t.Errorf("Python's plan differs from Go's:\npython: %v\ngo:     %v", got, want)
		}
		// One casing everywhere: proto field names, as the gateway and the CLI
		// write them, and zero values written (the first node of a placement).
		if !strings.Contains(stdout, `"micro_batch"`) || strings.Contains(stdout, `"microBatch"`) || !strings.Contains(stdout, `"node": 0`) {
			t.Errorf("not the API's JSON casing, or zero values left out:\n%s", stdout)
		}
	})

	t.Run("text", func(t *testing.T) {
		stdout, stderr, code := pc.run(t, example, "--server", p.grpcAddr)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		l := want.GetLayout()
		var nodes []string
		for _, n := range want.GetPlacement().GetNodes() {
			nodes = append(nodes, fmt.Sprintf("%d[", n.GetNode()))
		}
		for _, s := range append([]string{
			"best plan for llama3-8b on 32 GPUs of dgx-h100",
			fmt.Sprintf("layout     tp=%d pp=%d dp=%d cp=%d ep=%d zero=%d micro_batch=%d ", l.GetTp(), l.GetPp(), l.GetDp(), l.GetCp(), l.GetEp(), l.GetZero(), l.GetMicroBatch()),
			fmt.Sprintf("step time  %.3f s", want.GetEstimate().GetStepTimeS()),
			// Every part of the breakdown, so that they add up to the step time.
			fmt.Sprintf("contention %.3f", want.GetEstimate().GetBreakdown().GetContentionS()),
			fmt.Sprintf("nodes      %d: ", len(nodes)),
		}, nodes...) {
			if !strings.Contains(stdout, s) {
				t.Errorf("output lacks %q:\n%s", s, stdout)
			}
		}
		// The parts printed add up to the step time printed, to the rounding of
		// each (0.0005 s a part).
		if _, line, ok := strings.Cut(stdout, "step time  "); ok {
			line, _, _ = strings.Cut(line, "\n")
			step, parts, _ := strings.Cut(line, " s: ")
			total, sum, n := 0.0, 0.0, 0
			fmt.Sscanf(step, "%g", &total)
			for _, part := range strings.Split(parts, ", ") {
				var v float64
				if i := strings.LastIndexByte(part, ' '); i > 0 {
					if _, err := fmt.Sscanf(part[i+1:], "%g", &v); err == nil {
						sum += v
						n++
					}
				}
			}
			if math.Abs(sum-total) > 0.0005*float64(n+1) {
				t.Errorf("the parts printed add up to %.3f s of the %.3f s step: %s", sum, total, line)
			}
		}
		t.Logf("\n%s", stdout)
	})

	t.Run("error", func(t *testing.T) {
		_, stderr, code := pc.run(t, example, "--server", p.grpcAddr, "--model", "llama3-9b")
		if code != 1 || !strings.Contains(stderr, "NOT_FOUND") || !strings.Contains(stderr, "field: model.name") {
			t.Errorf("unknown model: exit %d, stderr %s", code, stderr)
		}
	})
}
