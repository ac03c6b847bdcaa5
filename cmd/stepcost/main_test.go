package main

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestMain runs the command itself when the test re-executes its binary with
// STEPCOST_RUN_MAIN set, so that the tests can signal a real process.
func TestMain(m *testing.M) {
	if os.Getenv("STEPCOST_RUN_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// The first interrupt cancels the command; a second ends the process whatever
// it is doing: estimate --in - blocked reading a standard input that never
// comes ignored every SIGINT and SIGTERM after the first (Ctrl-C did nothing).
func TestSecondSignalEndsTheProcess(t *testing.T) {
	cmd := exec.Command(os.Args[0], "estimate", "--in", "-")
	cmd.Env = append(os.Environ(), "STEPCOST_RUN_MAIN=1")
	stdin, err := cmd.StdinPipe() // never written, never closed until the end
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	time.Sleep(500 * time.Millisecond) // past signal.NotifyContext
	for i := range 2 {
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
			return
		case <-time.After(2 * time.Second):
			if i == 1 {
				cmd.Process.Kill()
				<-done
				t.Fatal("still running 2 s after a second SIGINT")
			}
		}
	}
}
