package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// enumValue is a flag that takes one of a few names (or, as a list, several
// separated by commas). Every enum flag rejects a name the same way, when the
// command line is parsed (exit code 2), listing the names it accepts and the
// closest of them:
//
//	invalid argument "interleave" for "--schedule" flag: want one of gpipe, 1f1b, interleaved, zb-h1, zb-v, dualpipe; did you mean "interleaved"?
//
// The names are what completion offers.
type enumValue struct {
	p      *string
	names  []string          // the names offered and listed
	accept func(string) bool // nil: one of names, in any case; else also the aliases it takes
	list   bool              // comma-separated names
	// emptyOK: an empty value is taken, as the default of a flag whose default is
	// empty ("the framework's", "all").
	emptyOK bool
}

// enumFlag defines an enum flag on fs.
func enumFlag(fs *pflag.FlagSet, name, value, usage string, names []string) *string {
	p := new(string)
	*p = value
	fs.Var(&enumValue{p: p, names: names, emptyOK: value == ""}, name, usage)
	return p
}

// enumListFlag defines a flag taking a comma-separated list of names.
func enumListFlag(fs *pflag.FlagSet, name, value, usage string, names []string) *string {
	p := new(string)
	*p = value
	fs.Var(&enumValue{p: p, names: names, list: true, emptyOK: value == ""}, name, usage)
	return p
}

// enumFlagFunc is enumFlag whose names accept also takes (aliases, other spellings).
func enumFlagFunc(fs *pflag.FlagSet, name, value, usage string, names []string, accept func(string) bool) *string {
	p := new(string)
	*p = value
	fs.Var(&enumValue{p: p, names: names, accept: accept, emptyOK: value == ""}, name, usage)
	return p
}

func (e *enumValue) String() string { return *e.p }

// Type is what --help shows after the flag's name.
func (e *enumValue) Type() string {
	if e.list {
		return "names"
	}
	return "name"
}

func (e *enumValue) Set(s string) error {
	items := []string{s}
	if e.list {
		items = strings.Split(s, ",")
	}
	for _, it := range items {
		it = strings.TrimSpace(it)
		if s == "" && e.emptyOK || e.ok(it) {
			continue
		}
		return fmt.Errorf("want %s%s", e.want(), didYouMean(it, suggest(it, e.names, "")))
	}
	*e.p = s
	return nil
}

func (e *enumValue) ok(s string) bool {
	if e.accept != nil {
		return e.accept(s)
	}
	for _, n := range e.names {
		if strings.EqualFold(n, s) {
			return true
		}
	}
	return false
}

// want is "one of a, b, c" or, for a list, "a comma-separated list of a, b, c".
func (e *enumValue) want() string {
	if e.list {
		return "a comma-separated list of " + strings.Join(e.names, ", ")
	}
	return "one of " + strings.Join(e.names, ", ")
}

// The names of the enum flags, from the estimator's own constants.
var (
	precisionNames   = []string{string(step.BF16), string(step.FP16), string(step.FP8)}
	scheduleNames    = []string{string(step.GPipe), string(step.OneFOneB), string(step.Interleaved), string(step.ZeroBubble), string(step.ZeroBubbleV), string(step.DualPipe)}
	recomputeNames   = []string{string(step.RecomputeNone), string(step.RecomputeSelective), string(step.RecomputeOps), string(step.RecomputeFull)}
	prefetchNames    = []string{string(step.PrefetchPre), string(step.PrefetchPost), string(step.PrefetchNone)}
	paramGatherNames = []string{string(step.ParamGatherExposed), string(step.ParamGatherOverlapped)}
	fp8RecipeNames   = []string{string(step.FP8Delayed), string(step.FP8Current), string(step.FP8Rowwise), string(step.FP8MXFP8), string(step.FP8Blockwise)}
	dispatcherNames  = []string{step.DispatchAllToAll, step.DispatchDeepEP}
	offloadNames     = []string{string(step.OffloadNone), string(step.OffloadOptimizer), string(step.OffloadParams)}
	objectiveNames   = []string{string(planner.FastestStep), string(planner.Throughput), string(planner.Cost)}
	gradDTypeNames   = []string{"bf16", "fp16", "fp32"}
	formatNames      = []string{"table", "json", "csv"}
)

// onOffFlag is a list of on and off (true and false too).
func onOffFlag(fs *pflag.FlagSet, name, usage string) *string {
	p := new(string)
	fs.Var(&enumValue{p: p, names: []string{"on", "off"}, list: true, emptyOK: true, accept: func(s string) bool {
		switch strings.ToLower(s) {
		case "on", "off", "true", "false":
			return true
		}
		return false
	}}, name, usage)
	return p
}

// cpVariantFlag is a list of ring and ulysses (all-to-all too).
func cpVariantFlag(fs *pflag.FlagSet, name, usage string) *string {
	p := new(string)
	fs.Var(&enumValue{p: p, names: []string{"ring", "ulysses"}, list: true, emptyOK: true, accept: func(s string) bool {
		switch strings.ToLower(s) {
		case "ring", "ulysses", "all-to-all":
			return true
		}
		return false
	}}, name, usage)
	return p
}

// frameworkFlag is a framework's name or alias.
func frameworkFlag(fs *pflag.FlagSet, usage string) *string {
	return enumFlagFunc(fs, "framework", "", usage, framework.Names(), func(s string) bool {
		_, err := framework.Lookup(s)
		return err == nil
	})
}

// parses is an accept function: parse takes the name.
func parses[T any](parse func(string) (T, error)) func(string) bool {
	return func(s string) bool {
		_, err := parse(s)
		return err == nil
	}
}

func opNames() []string {
	var out []string
	for _, o := range collective.Ops() {
		out = append(out, o.String())
	}
	return out
}

func algoNames() []string {
	out := []string{collective.Auto.String()}
	for _, a := range collective.Algorithms() {
		out = append(out, a.String())
	}
	return out
}
