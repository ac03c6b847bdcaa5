package main_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves goroutines behind (clients not closed,
// log readers of daemons not stopped), and removes the daemon built for the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if binDir != "" {
			os.RemoveAll(binDir)
		}
		os.Exit(code)
	}))
}

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// stepcostd builds the daemon once for all the tests of this package that start it
// more than once.
func stepcostd(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "stepcostd-test"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "stepcostd")
		build := exec.Command("go", "build", "-o", binPath, ".")
		build.Stderr = os.Stderr
		binErr = build.Run()
	})
	if binErr != nil {
		t.Fatalf("build: %v", binErr)
	}
	return binPath
}

// proc is a daemon started by a test, on loopback ports the kernel picks.
type proc struct {
	cmd                *exec.Cmd
	grpcAddr, httpAddr string
	exited             chan struct{} // closed when the process has exited
	exitErr            error         // set before exited is closed

	mu   sync.Mutex
	logs []string
}

// launch starts the daemon with extra environment variables and flags, and waits
// until it serves. It is killed at the end of the test if still running.
func launch(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{exited: make(chan struct{})}
	p.cmd = exec.Command(stepcostd(t), append([]string{"--warm-up=none", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, args...)...)
	p.cmd.Env = append(os.Environ(), env...)
	pipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrs := make(chan [2]string, 1)
	go func() {
		re := regexp.MustCompile(`msg=serving grpc=(\S+) http=(\S+)`)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.mu.Lock()
			p.logs = append(p.logs, sc.Text())
			p.mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addrs <- [2]string{m[1], m[2]}
			}
		}
		// Wait only once the pipe is drained (os/exec's rule).
		p.exitErr = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	select {
	case a := <-addrs:
		p.grpcAddr, p.httpAddr = a[0], a[1]
		return p
	case <-p.exited:
		t.Fatalf("daemon exited before serving (%v):\n%s", p.exitErr, p.log())
	case <-time.After(60 * time.Second):
		t.Fatalf("daemon did not start:\n%s", p.log())
	}
	return nil
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.logs, "\n")
}

// memory reads the process's resident set now and at its peak (VmRSS, VmHWM) in
// bytes; ok is false where /proc is not there to read.
func (p *proc) memory() (rss, peak int64, ok bool) {
	if runtime.GOOS != "linux" {
		return 0, 0, false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, 0, false
	}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || f[2] != "kB" {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return rss, peak, peak > 0
}
