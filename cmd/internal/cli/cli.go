// Package cli is the stepcost command line: sub-commands parse their flags, call the
// estimator in-process and print a table for people or JSON for programs.
//
// Commands and flags are parsed by cobra and pflag, which also give the grouped
// --help, the "did you mean" of mistyped commands and flags, and the shell
// completion scripts. Each command defines its flags on the flag set it is handed
// and returns the function that runs once they are parsed.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stepcost/stepcost/internal/buildinfo"
)

// Exit codes: a command line that cannot be understood is told apart from a
// command that ran and failed.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed: no feasible plan, a server that does not answer, a file that does not parse, an invalid request, flags missing or in conflict, a value out of range
	exitUsage   = 2 // the command line cannot be understood: unknown command or flag, a value not of the flag's type or not one of its values, a stray or missing argument
)

// exitCodesHelp is the exit codes as --help gives them.
const exitCodesHelp = `Exit status:
  0  success
  1  the command ran and failed: no feasible plan, a request the estimator rejects
     (a value out of range, flags missing or in conflict), a file that does not
     parse, a server that does not answer
  2  the command line cannot be understood: unknown command or flag, a value not of
     the flag's type (a number, a list of integers, a size) or not one of its values,
     a stray or missing argument
  Errors go to standard error; with --json, standard output holds JSON or nothing.`

// runFunc runs a command once its flags are parsed; args are its positional
// arguments (none unless the command takes some).
type runFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// command is one sub-command: define puts its flags on fs and returns what runs.
type command struct {
	name, group, summary string
	synopsis             string // after "stepcost <name> "
	example              string
	args                 cobra.PositionalArgs // nil: no positional arguments
	define               func(fs *pflag.FlagSet) runFunc
}

// Command groups of the top-level help.
const (
	groupModel = "model"
	groupCheck = "check"
	groupOther = "other"
)

func commands() []command {
	return []command{
		{name: "plan", group: groupModel, summary: "search and rank the ways to run a training job on a cluster",
			synopsis: "--model NAME | --model-file F | --params N | --layers L --hidden H --heads A … --cluster NAME --gpus N | --max-gpus N --gbs G --seq S [flags]",
			example: `  # The ten fastest layouts of Llama 3 70B on 256 H100 GPUs
  stepcost plan --model llama3-70b --cluster dgx-h100 --gpus 256 --gbs 1024 --seq 8192

  # Cheapest way to train 1 T tokens on up to 512 GPUs at $2.50 per GPU-hour
  stepcost plan --model llama3-70b --cluster dgx-h100 --max-gpus 512 --gbs 1024 --seq 8192 \
      --objective cost --price 2.5 --tokens 1e12

  # What if nodes 3 and 7 fail, with only interleaved 1F1B and TP 4 or 8 allowed
  stepcost plan --model llama3-70b --cluster dgx-h100 --gpus 256 --gbs 1024 --seq 8192 \
      --nodes 34 --exclude-nodes 3,7 --schedule interleaved --tp 4,8`,
			define: planCommand},
		{name: "rank", group: groupModel, summary: "estimate and rank a file of explicit layouts (JSON lines), in process or on a server",
			synopsis: "--in configs.jsonl [--server host:port] [--format table|json|csv]",
			example: `  # Rank the layouts of configs.jsonl (one EstimateStep request per line) by step time
  stepcost rank --in configs.jsonl

  # By cost on a running daemon, as CSV
  stepcost rank --in configs.jsonl --server localhost:8081 --objective cost --price 2.5 --tokens 1e12 --format csv`,
			define: rankCommand},
		{name: "estimate", group: groupModel, summary: "estimate one training step of a parallel layout: time, breakdown, memory",
			synopsis: "--model NAME --cluster NAME --gpus N --tp T --pp P --mbs B --gbs G --seq S [flags]",
			example: `  # One step of Llama 3 70B with TP 8 × PP 4 × DP 8 on 256 H100 GPUs
  stepcost estimate --model llama3-70b --cluster dgx-h100 --gpus 256 --tp 8 --pp 4 --mbs 1 --gbs 1024 --seq 8192

  # The same with interleaved 1F1B, selective recomputation and fp8, drawn as a picture
  stepcost estimate --model llama3-70b --cluster dgx-h100 --gpus 256 --tp 8 --pp 4 --vpp 5 --sp \
      --recompute selective --precision fp8 --mbs 1 --gbs 1024 --seq 8192 --svg step.svg

  # A request as the REST API takes it, with one field overridden
  stepcost estimate --in request.json --gbs 2048`,
			define: estimateCommand},
		{name: "collective", group: groupModel, summary: "price one collective (all-reduce, all-gather, …) on a cluster",
			synopsis: "--cluster NAME | --cluster-file FILE --op OP --size SIZE [flags]",
			example: `  # A 1 GiB all-reduce over 4 DGX H100 nodes: every algorithm and protocol, the chosen one first
  stepcost collective --cluster dgx-h100 --nodes 4 --op allreduce --size 1GiB

  # Force the ring and show its schedule step by step
  stepcost collective --cluster dgx-h100 --nodes 2 --op allgather --size 256MiB --algo ring --steps`,
			define: collectiveCommand},
		{name: "calibrate", group: groupCheck, summary: "fit a cluster to your own nccl-tests outputs, measurement rows and training logs, and write its cluster file",
			synopsis: "--cluster NAME | --cluster-file FILE [flags] FILE...",
			example: `  # Fit dgx-h100's links to your nccl-tests outputs and write the calibrated cluster
  stepcost calibrate --cluster dgx-h100 all_reduce_16n.txt all_gather_16n.txt --out mine.yaml

  # Then use it
  stepcost plan --cluster-file mine.yaml --model llama3-70b --gpus 128 --gbs 512 --seq 8192`,
			args: filesArgs, define: calibrateCommand},
		{name: "accuracy", group: groupCheck, summary: "compare the collective model with the published nccl-tests measurements",
			synopsis: "[--rows] [--json] [--fit [--from-prior]] [--cross-validate]",
			example: `  stepcost accuracy
  stepcost accuracy --rows --json`,
			define: accuracyCommand},
		{name: "runs", group: groupCheck, summary: "compare the step-time model with the published training runs (dense, MoE, fp8, Blackwell)",
			synopsis: "[--json] [--filled]",
			example:  `  stepcost runs --filled`,
			define:   runsCommand},
		{name: "catalog", group: groupOther, summary: "list the GPUs, systems and models of the embedded catalog",
			synopsis: "[--json]", example: `  stepcost catalog
  stepcost catalog --json`,
			define: catalogCommand},
		{name: "load", group: groupOther, summary: "drive a running stepcostd with EstimatePlan at a fixed concurrency and report latency",
			synopsis: "--server host:port --in plan.json [--concurrency N] [--duration D] [--requests N] [--uncached]",
			example:  `  stepcost load --server localhost:8081 --in plan.json --concurrency 16 --duration 30s --uncached`,
			define:   loadCommand},
		{name: "version", group: groupOther, summary: "print the version: build, commit and estimator (also --version)",
			example: `  stepcost version`,
			define:  versionCommand},
		{name: "completion", group: groupOther, summary: "print a shell completion script: bash, zsh or fish",
			synopsis: "bash|zsh|fish",
			example: `  bash: source <(stepcost completion bash)
  zsh:  stepcost completion zsh > "${fpath[1]}/_stepcost"
  fish: stepcost completion fish > ~/.config/fish/completions/stepcost.fish`,
			args: shellArgs},
	}
}

// commandNames is the names of the commands, help among them.
func commandNames() []string {
	var out []string
	for _, c := range commands() {
		out = append(out, c.name)
	}
	return append(out, "help")
}

// usageError is a command line that cannot be understood (exit code 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return &usageError{fmt.Errorf(format, a...)} }

// failure is the error of a command that ran (exit code 1).
type failure struct{ err error }

func (e *failure) Error() string { return e.err.Error() }
func (e *failure) Unwrap() error { return e.err }

// Run executes the command line args (without the program name) and returns the
// process exit code: 0 success, 1 failure, 2 bad usage.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		args = []string{"version"}
	}
	root := newRoot(stdout, stderr)
	if len(args) == 0 {
		writeHelp(stderr, root)
		return exitUsage
	}
	if c, _, _ := root.Find(args); c == root && !strings.HasPrefix(args[0], "-") && !strings.HasPrefix(args[0], "__") {
		// Not a command: say so, rather than fail on the flags that follow it.
		err := root.RunE(root, args[:1])
		fmt.Fprintf(stderr, "stepcost: %v\nRun 'stepcost --help' for usage.\n", err)
		return exitUsage
	}
	args = longDashes(root, args)
	if c, _, err := root.Find(args); err == nil && c != nil && c != root {
		if err := givenTwice(root, c, args); err != nil {
			// Said once the command line parses, its values in range, before
			// the command runs.
			c.PreRunE = func(c *cobra.Command, _ []string) error {
				if err := int32Flags(c.Flags()); err != nil {
					return err
				}
				return &failure{err}
			}
		}
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	name := "stepcost"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	if err == nil {
		// Help asked for and not written (a full disk) fails as a command's
		// output does.
		if o, ok := root.OutOrStdout().(*output); ok && o.err != nil {
			fmt.Fprintf(stderr, "%s: standard output: %v\n", name, o.err)
			return exitFailure
		}
		return exitOK
	}
	var f *failure
	if errors.As(err, &f) {
		fmt.Fprintf(stderr, "%s: %v\n", name, f.err)
		return exitFailure
	}
	// Everything else comes from parsing the command line.
	fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", name, err, name)
	return exitUsage
}

// newRoot is the command tree, writing to stdout and stderr.
func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "stepcost",
		Short: "stepcost estimates LLM training communication and step time on GPU clusters.",
		// The root runs only to reject what is not a command.
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				writeHelp(stderr, c)
				return usagef("a command is required")
			}
			return usagef("unknown command %q%s", args[0], didYouMean(args[0], suggest(args[0], commandNames(), "")))
		},
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	// Help goes to standard output through an output that keeps the first
	// write that failed, which Run reports.
	root.SetOut(newOutput(stdout, false))
	root.SetErr(stderr)
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { writeHelp(c.OutOrStdout(), c) })
	root.SetUsageFunc(func(c *cobra.Command) error { writeHelp(c.ErrOrStderr(), c); return nil })
	root.SetFlagErrorFunc(flagError)
	root.PersistentFlags().Bool("wide", false, fmt.Sprintf("tables: every column at full width, whatever the terminal's width (default: fit the terminal, or $COLUMNS, or %d columns when not a terminal)", defaultColumns))
	root.AddGroup(&cobra.Group{ID: groupModel, Title: "Estimate and plan:"},
		&cobra.Group{ID: groupCheck, Title: "Calibrate and check the model:"},
		&cobra.Group{ID: groupOther, Title: "Other commands:"})
	root.SetHelpCommandGroupID(groupOther)
	for _, c := range commands() {
		root.AddCommand(c.cobra(root, stdout, stderr))
	}
	root.SetHelpCommand(&cobra.Command{
		Use: "help [command]", Short: helpSummary, GroupID: groupOther, Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, _, err := root.Find(args)
			if err != nil || c == root && len(args) > 0 {
				return usagef("unknown command %q%s", args[0], didYouMean(args[0], suggest(args[0], commandNames(), "")))
			}
			writeHelp(root.OutOrStdout(), c)
			return nil
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return commandNames(), cobra.ShellCompDirectiveNoFileComp
		},
	})
	root.InitDefaultHelpCmd()
	return root
}

// cobra is c as a cobra command.
func (c command) cobra(root *cobra.Command, stdout, stderr io.Writer) *cobra.Command {
	cc := &cobra.Command{
		Use:     strings.TrimSpace(c.name + " " + c.synopsis),
		Short:   c.summary,
		Example: c.example,
		GroupID: c.group,
		Args:    c.args,
	}
	if cc.Args == nil {
		cc.Args = noArgs
	}
	cc.Flags().SortFlags = false
	var run runFunc
	if c.define != nil {
		run = c.define(cc.Flags())
	} else {
		run = completionCommand(root)
	}
	cc.RunE = func(cmd *cobra.Command, args []string) error {
		if err := int32Flags(cmd.Flags()); err != nil {
			return err
		}
		if err := remoteOnly(cmd.Flags()); err != nil {
			return &failure{err}
		}
		wide, _ := cmd.Flags().GetBool("wide")
		out := newOutput(stdout, wide)
		err := run(cmd.Context(), args, out, stderr)
		if err == nil && out.err != nil {
			err = fmt.Errorf("standard output: %w", out.err)
		}
		var u *usageError
		if err == nil || errors.As(err, &u) {
			return err
		}
		return &failure{err}
	}
	registerCompletions(cc)
	return cc
}

// wideIntFlags are the integer flags whose value is not carried in one of the
// API's int32 fields: training.global_tokens is an int64, and load's counts never
// reach a request.
var wideIntFlags = map[string]bool{"global-tokens": true, "requests": true, "concurrency": true}

// int32Flags refuses, as a command line that is wrong (exit 2), an integer flag
// given a value an int32 cannot hold: every other integer flag ends in an int32
// field of the request (or a size of the same range), and the conversion would
// wrap it silently (2³² + 1 becomes 1).
func int32Flags(fs *pflag.FlagSet) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err != nil || f.Value.Type() != "int" || wideIntFlags[f.Name] {
			return
		}
		v, perr := strconv.ParseInt(f.Value.String(), 10, 64)
		switch {
		case perr != nil:
		case v > math.MaxInt32:
			err = usagef("invalid argument %q for \"--%s\" flag: out of range, at most %d", f.Value.String(), f.Name, math.MaxInt32)
		case v < math.MinInt32:
			err = usagef("invalid argument %q for \"--%s\" flag: out of range, at least %d", f.Value.String(), f.Name, math.MinInt32)
		}
	})
	return err
}

// remoteFlags are the flags that say how to reach a daemon.
var remoteFlags = []string{"tls", "tls-ca", "tls-cert", "tls-key", "token-file"}

// remoteOnly refuses a flag of remoteFlags given without --server (or with an
// empty one): the command runs in process, and would drop it without a word.
func remoteOnly(fs *pflag.FlagSet) error {
	server := fs.Lookup("server")
	if server == nil || server.Value.String() != "" {
		return nil
	}
	set := changed(fs)
	for _, name := range remoteFlags {
		if set[name] {
			return fmt.Errorf("--%s: only with --server (it says how to reach a stepcostd); without --server the command runs in process", name)
		}
	}
	return nil
}

// noArgs rejects positional arguments.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}

// filesArgs requires one or more files.
func filesArgs(_ *cobra.Command, args []string) error {
	if len(args) == 0 {
		return usagef("give the nccl-tests output files, measurement rows (JSON lines) and training logs to calibrate on")
	}
	return nil
}

// longDashes rewrites -name to --name for the command's long flags, so the
// single-dash spelling of the standard flag package keeps working (pflag reads
// -name as the one-letter flags n, a, m, e). Only names the command defines are
// rewritten, and nothing after "--".
func longDashes(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		cmd = root
	}
	out := make([]string, len(args))
	copy(out, args)
	for i, a := range out {
		if a == "--" {
			break
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		if cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil || root.PersistentFlags().Lookup(name) != nil || name == "help" {
			out[i] = "-" + a
		}
	}
	return out
}

// commaList marks a flag whose one value is a comma-separated list the flag's
// description does not start "allowed …" for (--exclude-nodes 3,7): given twice,
// its refusal shows the two values in one, as a list flag's does.
const commaList = "stepcost-comma-list"

// givenTwice refuses a flag of cmd given twice in args with two values, naming
// both: the flag parser keeps the last and drops the first without a word (as
// protobuf does a field given twice, which the service refuses too). A
// repeatable flag (--degraded-node) and one value given twice are taken; what
// follows "--" is not a flag. args have their long flags spelled with two dashes.
func givenTwice(root, cmd *cobra.Command, args []string) error {
	lookup := func(name string) *pflag.Flag {
		if f := cmd.Flags().Lookup(name); f != nil {
			return f
		}
		return root.PersistentFlags().Lookup(name)
	}
	seen := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if len(a) < 3 || !strings.HasPrefix(a, "--") {
			continue
		}
		name, value, hasValue := strings.Cut(a[2:], "=")
		if name == "help" {
			return nil
		}
		f := lookup(name)
		if f == nil {
			continue // the parser says so
		}
		if !hasValue {
			if f.NoOptDefVal != "" {
				value = f.NoOptDefVal
			} else if i+1 < len(args) {
				i++
				value = args[i]
			}
		}
		typ := f.Value.Type()
		if strings.HasSuffix(typ, "Array") || strings.HasSuffix(typ, "Slice") {
			continue // repeatable: each adds a value
		}
		if typ == "bool" { // --json and --json=true are one value
			if b, err := strconv.ParseBool(value); err == nil {
				value = strconv.FormatBool(b)
			}
		}
		first, ok := seen[name]
		if !ok {
			seen[name] = value
			continue
		}
		if first == value {
			continue
		}
		hint := ""
		if e, isEnum := f.Value.(*enumValue); isEnum && e.list || strings.HasPrefix(f.Usage, "allowed ") || f.Annotations[commaList] != nil {
			hint = fmt.Sprintf(" (a list in one value, comma-separated: --%s %s,%s)", name, first, value)
		}
		return fmt.Errorf("--%s: given twice, as %q and %q; give it once%s", name, first, value, hint)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func versionCommand(*pflag.FlagSet) runFunc {
	return func(_ context.Context, _ []string, stdout, _ io.Writer) error {
		fmt.Fprintln(stdout, buildinfo.Version("stepcost"))
		return nil
	}
}

// changed is the names of the flags given on the command line.
func changed(fs *pflag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { set[f.Name] = true })
	return set
}
