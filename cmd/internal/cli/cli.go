// Package cli is the stepcost command line: sub-commands parse their flags, call the
// estimator in-process and print a table for people or JSON for programs.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/stepcost/stepcost/internal/buildinfo"
)

// command is one sub-command.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"plan", "search and rank the ways to run a training job on a cluster", runPlan},
		{"rank", "estimate and rank a file of explicit layouts (JSON lines), in process or on a server", runRank},
		{"estimate", "estimate one training step of a parallel layout: time, breakdown, memory", runEstimate},
		{"collective", "price one collective (all-reduce, all-gather, …) on a cluster", runCollective},
		{"calibrate", "fit a cluster to your own nccl-tests outputs, measurement rows and training logs, and write its cluster file", runCalibrate},
		{"accuracy", "compare the collective model with the published nccl-tests measurements", runAccuracy},
		{"runs", "compare the step-time model with the published training runs", runRuns},
		{"catalog", "list the GPUs and systems of the embedded catalog", runCatalog},
		{"load", "drive a running stepcostd with EstimatePlan at a fixed concurrency and report latency", runLoad},
		{"version", "print the version: build, commit and estimator (also --version)", runVersion},
		{"completion", "print a shell completion script: bash, zsh or fish", runCompletion},
	}
}

// errUsage marks errors after which the usage was already printed.
var errUsage = errors.New("usage")

// Run executes the command line args (without the program name) and returns the
// process exit code: 0 success, 1 failure, 2 bad usage.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		args = []string{"version"}
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(ctx, args[1:], stdout, stderr)
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.Is(err, errUsage):
				return 2
			default:
				fmt.Fprintf(stderr, "stepcost %s: %v\n", c.name, err)
				return 1
			}
		}
	}
	fmt.Fprintf(stderr, "stepcost: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "stepcost estimates LLM training communication and step time on GPU clusters.")
	fmt.Fprintln(w, "\nUsage: stepcost <command> [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'stepcost <command> -h' for a command's flags.")
}

// newFlags builds a flag set that reports errors as usage errors instead of exiting.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("stepcost "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if fc, ok := stderr.(*flagCollector); ok {
		fc.fs = fs
	}
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: stepcost %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags and rejects stray positional arguments.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table prints aligned columns.
type table struct {
	head []string
	rows [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	width := make([]int, len(t.head))
	for i, h := range t.head {
		width[i] = len([]rune(h))
	}
	for _, r := range t.rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		for i, c := range cells {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := width[i] - len([]rune(c))
			if i == 0 {
				b.WriteString(c + strings.Repeat(" ", pad))
			} else {
				b.WriteString(strings.Repeat(" ", pad) + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(t.head)
	for _, r := range t.rows {
		line(r)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintln(stdout, buildinfo.Version("stepcost"))
	return nil
}
