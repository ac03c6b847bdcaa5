package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the side a program writes to (a terminal) and
// the side that reads what it wrote.
func openPTY(t *testing.T) (term, reader *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("open pts: %v", err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return s, m
}

// On a terminal, rank draws its progress with carriage returns; into a file or
// /dev/null it draws none. Tables fit the terminal's width.
func TestProgressAndWidthOnATerminal(t *testing.T) {
	tty, reader := openPTY(t)
	if !isTerminal(tty) {
		t.Fatal("a pseudo-terminal not taken for a terminal")
	}
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 90}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("COLUMNS", "200") // the terminal's own width wins
	if o := newOutput(tty, false); o.cols != 90 {
		t.Errorf("terminal of 90 columns: fitting %d", o.cols)
	}

	good := strings.SplitN(configs, "\n", 2)[0]
	f := filepath.Join(t.TempDir(), "c.jsonl")
	if err := os.WriteFile(f, []byte(strings.Repeat(good+"\n", rankBatch+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := Run(context.Background(), []string{"rank", "--in", f, "--format", "csv"}, &out, tty); code != 0 {
		t.Fatalf("rank: exit %d", code)
	}
	tty.Close()
	drawn, _ := io.ReadAll(reader) // until the terminal is closed (EIO)
	if !bytes.Contains(drawn, []byte("\rranking")) || !bytes.Contains(drawn, []byte(fmt.Sprintf("%d/%d", rankBatch+1, rankBatch+1))) {
		t.Errorf("no progress on the terminal: %q", drawn)
	}

	for _, name := range []string{os.DevNull, filepath.Join(t.TempDir(), "stderr.txt")} {
		w, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if code := Run(context.Background(), []string{"rank", "--in", f, "--format", "csv"}, io.Discard, w); code != 0 {
			t.Fatalf("rank: exit %d", code)
		}
		w.Close()
		if name != os.DevNull {
			if b, _ := os.ReadFile(name); len(b) != 0 {
				t.Errorf("progress in a redirected file: %q", b)
			}
		}
	}
}
