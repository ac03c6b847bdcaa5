package main_test

import (
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/stepcost/stepcost/server"
)

// deployment is what this test reads of deploy/kubernetes/deployment.yaml.
type deployment struct {
	Spec struct {
		Template struct {
			Spec struct {
				TerminationGracePeriodSeconds int `json:"terminationGracePeriodSeconds"`
				Containers                    []struct {
					Name  string          `json:"name"`
					Args  []string        `json:"args"`
					Ports []containerPort `json:"ports"`
					Env   []struct {
						Name  string `json:"name"`
						Value string `json:"value"`
					} `json:"env"`
					StartupProbe, ReadinessProbe, LivenessProbe *probe
				} `json:"containers"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

type containerPort struct {
	Name          string `json:"name"`
	ContainerPort int    `json:"containerPort"`
}

type probe struct {
	HTTPGet *struct {
		Path string `json:"path"`
		Port string `json:"port"`
	} `json:"httpGet"`
	PeriodSeconds    int `json:"periodSeconds"`
	FailureThreshold int `json:"failureThreshold"`
}

// The Deployment as an operator applies it: the daemon takes its args and env
// (ParseFlags, and the process itself); each listen flag's port is the container
// port of its name; every probe asks GET /healthz on the port that --health-addr
// opens; --drain-delay plus --shutdown-grace fit in terminationGracePeriodSeconds;
// the Services send to named container ports; the image EXPOSEs ports the pod
// opens. Then the daemon runs with those args (the addresses moved to free
// loopback ports) and that env: it is ready within the startup probe's budget,
// warm-up included, the probe's path answers 200 on the probe port and nothing
// else there; on SIGTERM readiness turns 503 at once and the process exits 0 within
// the grace period.
func TestDeploymentManifest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon")
	}
	data, err := os.ReadFile("../../deploy/kubernetes/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d deployment
	if err := yaml.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name+"="+e.Value)
		// Go's units (runtime/debug.SetMemoryLimit): a Kubernetes quantity such as
		// 900Mi stops the runtime before main.
		if e.Name == "GOMEMLIMIT" && !regexp.MustCompile(`^[0-9]+(B|KiB|MiB|GiB|TiB)?$`).MatchString(e.Value) {
			t.Errorf("GOMEMLIMIT=%s is not in Go's units (e.g. 900MiB)", e.Value)
		}
	}

	// The args and env as the daemon reads them.
	for _, e := range c.Env {
		t.Setenv(e.Name, e.Value)
	}
	cfg, err := server.ParseFlags(c.Args, os.Stderr)
	if err != nil {
		t.Fatalf("the daemon refuses the Deployment's args %q: %v", c.Args, err)
	}
	for flag, addr := range map[string]string{"grpc": cfg.GRPCAddr, "http": cfg.HTTPAddr, "health": cfg.HealthAddr} {
		if want := fmt.Sprintf(":%d", ports[flag]); ports[flag] == 0 || addr != want {
			t.Errorf("--%s-addr is %q, the container port %q is %d", flag, addr, flag, ports[flag])
		}
	}
	grace := time.Duration(pod.TerminationGracePeriodSeconds) * time.Second
	if cfg.DrainDelay+cfg.ShutdownGrace >= grace {
		t.Errorf("--drain-delay %v + --shutdown-grace %v does not fit in terminationGracePeriodSeconds %v", cfg.DrainDelay, cfg.ShutdownGrace, grace)
	}
	probes := map[string]*probe{"startupProbe": c.StartupProbe, "readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe}
	for name, p := range probes {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port != "health" {
			t.Errorf("%s does not GET /healthz on the port named health: %+v", name, p)
		}
	}
	// The Services send to named container ports; the image exposes ports the pod opens.
	svc, err := os.ReadFile("../../deploy/kubernetes/service.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`targetPort: (\S+)`).FindAllStringSubmatch(string(svc), -1) {
		if _, ok := ports[m[1]]; !ok {
			t.Errorf("service.yaml sends to targetPort %s, which the container does not name", m[1])
		}
	}
	image, err := os.ReadFile("../../deploy/Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^EXPOSE (.*)$`).FindAllStringSubmatch(string(image), -1) {
		for _, f := range strings.Fields(m[1]) {
			n, _ := strconv.Atoi(f)
			if !slices.ContainsFunc(c.Ports, func(p containerPort) bool { return p.ContainerPort == n }) {
				t.Errorf("the Containerfile EXPOSEs %s, which the pod does not open", f)
			}
		}
	}

	// The daemon itself, with the args (addresses on free loopback ports, as the
	// pod's are its own) and the env, warm-up as the pod does it.
	var args []string
	for _, a := range c.Args {
		if name, _, ok := strings.Cut(a, "="); ok && strings.HasSuffix(name, "-addr") {
			a = name + "=127.0.0.1:0"
		}
		args = append(args, a)
	}
	start := time.Now()
	proc := launch(t, env, append(args, "--warm-up=default")...)
	ready := time.Since(start)
	budget := time.Duration(c.StartupProbe.PeriodSeconds*c.StartupProbe.FailureThreshold) * time.Second
	t.Logf("ready after %v (startup probe budget %v)", ready.Round(time.Millisecond), budget)
	if ready > budget/2 {
		t.Errorf("ready after %v: over half the startup probe's %v", ready, budget)
	}
	m := regexp.MustCompile(`msg=serving .* health=(\S+)`).FindStringSubmatch(proc.log())
	if m == nil {
		t.Fatalf("no probe port in the log:\n%s", proc.log())
	}
	health := "http://" + m[1]
	get := func(path string) int {
		resp, err := http.Get(health + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz on the probe port: %d", code)
	}
	if code := get("/v1/catalog"); code != http.StatusNotFound {
		t.Errorf("GET /v1/catalog on the probe port: %d, want 404", code)
	}
	if !strings.Contains(proc.log(), `msg="memory limit" MiB=540 GOMEMLIMIT=900MiB`) {
		t.Errorf("the memory limit is not the budget under GOMEMLIMIT:\n%s", proc.log())
	}

	// SIGTERM: not ready at once, gone within the grace period.
	stop := time.Now()
	if err := proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	notReady := false
	for time.Since(stop) < time.Duration(c.ReadinessProbe.PeriodSeconds)*time.Second && !notReady {
		notReady = get("/healthz") == http.StatusServiceUnavailable
		time.Sleep(50 * time.Millisecond)
	}
	if !notReady {
		t.Errorf("/healthz still not 503 %v after SIGTERM", time.Since(stop))
	}
	select {
	case <-proc.exited:
		t.Logf("exited %v after SIGTERM (grace %v): %v", time.Since(stop).Round(time.Millisecond), grace, proc.exitErr)
		if proc.exitErr != nil {
			t.Errorf("exit: %v\n%s", proc.exitErr, proc.log())
		}
	case <-time.After(grace):
		t.Errorf("still running %v after SIGTERM", grace)
	}
}
