package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
)

// Shell completion, generated from the command table and each command's flags:
// a new command or flag completes without further work.

func runCompletion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("completion", "bash|zsh|fish", stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: stepcost completion bash|zsh|fish\n\n"+
			"Prints a completion script for the shell. For example:\n"+
			"  bash: source <(stepcost completion bash)\n"+
			"  zsh:  stepcost completion zsh > \"${fpath[1]}/_stepcost\"\n"+
			"  fish: stepcost completion fish > ~/.config/fish/completions/stepcost.fish\n")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errUsage
	}
	cmds := completionCommands()
	switch fs.Arg(0) {
	case "bash":
		writeBash(stdout, cmds)
	case "zsh":
		writeZsh(stdout, cmds)
	case "fish":
		writeFish(stdout, cmds)
	default:
		return fmt.Errorf("completion: unknown shell %q (want bash, zsh or fish)", fs.Arg(0))
	}
	return nil
}

// compFlag is a flag as completion sees it.
type compFlag struct {
	name, usage string
	boolean     bool
	values      []string // the values to offer, if known
	file        bool     // a file name
}

type compCommand struct {
	name, summary string
	flags         []compFlag
}

// flagCollector is the standard error of a command run for its flags: newFlags
// hands it the command's flag set.
type flagCollector struct {
	io.Writer
	fs *flag.FlagSet
}

// flagsOf is the flags command c defines: c runs with -h (which only prints its
// usage), writing into a collector.
func flagsOf(c command) []compFlag {
	fc := &flagCollector{Writer: io.Discard}
	_ = c.run(context.Background(), []string{"-h"}, io.Discard, fc)
	if fc.fs == nil {
		return nil
	}
	values := map[string][]string{"cluster": systemNames(), "model": modelNames(), "format": {"table", "json", "csv"},
		"objective": {"step_time", "throughput", "cost"}, "precision": {"bf16", "fp16", "fp8"},
		"moe-dispatcher": {step.DispatchAllToAll, step.DispatchDeepEP}, "recompute-modules": step.RecomputeModuleNames(),
		"framework":  framework.Names(),
		"fp8-recipe": {string(step.FP8Delayed), string(step.FP8Current), string(step.FP8Rowwise), string(step.FP8MXFP8)}}
	var out []compFlag
	fc.fs.VisitAll(func(f *flag.Flag) {
		cf := compFlag{name: f.Name, usage: f.Usage, values: values[f.Name]}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			cf.boolean = true
		}
		switch {
		case f.Name == "in" || f.Name == "svg" || f.Name == "free-map" || strings.HasSuffix(f.Name, "-file") ||
			strings.Contains(f.Usage, "file"):
			cf.file = cf.values == nil && !cf.boolean
		}
		out = append(out, cf)
	})
	return out
}

func completionCommands() []compCommand {
	var out []compCommand
	for _, c := range commands() {
		cc := compCommand{name: c.name, summary: c.summary}
		if c.name != "completion" {
			cc.flags = flagsOf(c)
		}
		out = append(out, cc)
	}
	return out
}

func systemNames() []string {
	var out []string
	for _, s := range catalog.Systems() {
		out = append(out, s.Name)
	}
	sort.Strings(out)
	return out
}

func modelNames() []string {
	var out []string
	for _, a := range model.Catalog() {
		out = append(out, a.Name)
	}
	sort.Strings(out)
	return out
}

func commandNames(cmds []compCommand) string {
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.name
	}
	return strings.Join(names, " ")
}

func writeBash(w io.Writer, cmds []compCommand) {
	fmt.Fprintf(w, `# bash completion for stepcost (stepcost completion bash)
_stepcost() {
    local cur prev cmd opts
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD-1]}"
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=( $(compgen -W "%s help" -- "$cur") )
        return
    fi
    cmd="${COMP_WORDS[1]}"
    case "$cmd" in
`, commandNames(cmds))
	for _, c := range cmds {
		if c.name == "completion" {
			fmt.Fprintf(w, "        completion)\n            COMPREPLY=( $(compgen -W \"bash zsh fish\" -- \"$cur\") )\n            return ;;\n")
			continue
		}
		var names, files []string
		var values []string
		for _, f := range c.flags {
			names = append(names, "--"+f.name)
			if f.file {
				files = append(files, "--"+f.name)
			}
			if f.values != nil {
				values = append(values, fmt.Sprintf("                --%s) COMPREPLY=( $(compgen -W %q -- \"$cur\") ); return ;;", f.name, strings.Join(f.values, " ")))
			}
		}
		fmt.Fprintf(w, "        %s)\n", c.name)
		if len(files) > 0 || len(values) > 0 {
			fmt.Fprintf(w, "            case \"$prev\" in\n")
			for _, v := range values {
				fmt.Fprintln(w, v)
			}
			if len(files) > 0 {
				fmt.Fprintf(w, "                %s) COMPREPLY=( $(compgen -f -- \"$cur\") ); return ;;\n", strings.Join(files, "|"))
			}
			fmt.Fprintf(w, "            esac\n")
		}
		fmt.Fprintf(w, "            opts=%q ;;\n", strings.Join(names, " "))
	}
	fmt.Fprint(w, `        *) return ;;
    esac
    COMPREPLY=( $(compgen -W "$opts" -- "$cur") )
}
complete -F _stepcost stepcost
`)
}

// zshQuote escapes a description for an _arguments spec in single quotes.
func zshQuote(s string) string {
	r := strings.NewReplacer("'", `'\''`, "[", `\[`, "]", `\]`, ":", `\:`)
	return r.Replace(s)
}

func writeZsh(w io.Writer, cmds []compCommand) {
	fmt.Fprintln(w, "#compdef stepcost")
	fmt.Fprintln(w, "# zsh completion for stepcost (stepcost completion zsh)")
	fmt.Fprintln(w, "_stepcost() {")
	fmt.Fprintln(w, "  local -a commands")
	fmt.Fprintln(w, "  commands=(")
	for _, c := range cmds {
		fmt.Fprintf(w, "    '%s:%s'\n", c.name, strings.ReplaceAll(c.summary, "'", `'\''`))
	}
	fmt.Fprintln(w, "  )")
	fmt.Fprintln(w, "  if (( CURRENT == 2 )); then")
	fmt.Fprintln(w, "    _describe -t commands 'stepcost command' commands")
	fmt.Fprintln(w, "    return")
	fmt.Fprintln(w, "  fi")
	fmt.Fprintln(w, "  local cmd=${words[2]}")
	fmt.Fprintln(w, "  shift words")
	fmt.Fprintln(w, "  (( CURRENT-- ))")
	fmt.Fprintln(w, "  case $cmd in")
	for _, c := range cmds {
		fmt.Fprintf(w, "    %s)\n", c.name)
		if c.name == "completion" {
			fmt.Fprintln(w, "      _arguments '1:shell:(bash zsh fish)' ;;")
			continue
		}
		fmt.Fprint(w, "      _arguments")
		for _, f := range c.flags {
			spec := fmt.Sprintf("--%s[%s]", f.name, zshQuote(f.usage))
			switch {
			case f.boolean:
			case f.values != nil:
				spec += fmt.Sprintf(":%s:(%s)", f.name, strings.Join(f.values, " "))
			case f.file:
				spec += ":file:_files"
			default:
				spec += ":" + f.name + ": "
			}
			fmt.Fprintf(w, " \\\n        '%s'", spec)
		}
		fmt.Fprintln(w, " ;;")
	}
	fmt.Fprintln(w, "  esac")
	fmt.Fprintln(w, "}")
	fmt.Fprintln(w, `_stepcost "$@"`)
}

// fishQuote quotes s for fish in single quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

func writeFish(w io.Writer, cmds []compCommand) {
	fmt.Fprintln(w, "# fish completion for stepcost (stepcost completion fish)")
	fmt.Fprintln(w, "complete -c stepcost -f")
	names := commandNames(cmds)
	for _, c := range cmds {
		fmt.Fprintf(w, "complete -c stepcost -n 'not __fish_seen_subcommand_from %s' -a %s -d %s\n", names, c.name, fishQuote(c.summary))
	}
	for _, c := range cmds {
		cond := fmt.Sprintf("'__fish_seen_subcommand_from %s'", c.name)
		if c.name == "completion" {
			fmt.Fprintf(w, "complete -c stepcost -n %s -a 'bash zsh fish'\n", cond)
			continue
		}
		for _, f := range c.flags {
			line := fmt.Sprintf("complete -c stepcost -n %s -l %s -d %s", cond, f.name, fishQuote(f.usage))
			switch {
			case f.boolean:
			case f.values != nil:
				line += " -x -a " + fishQuote(strings.Join(f.values, " "))
			case f.file:
				line += " -r -F"
			default:
				line += " -x"
			}
			fmt.Fprintln(w, line)
		}
	}
}
