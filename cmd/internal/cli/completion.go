package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/model"
)

// Shell completion: cobra's scripts ask the program itself (stepcost __complete …)
// for the commands, the flags of the command being typed and the values of the
// flag being typed — the names of an enum flag, the catalog's systems and models
// for --cluster and --model, files for the flags that take one — so a new command,
// flag or catalog entry completes without further work.

// shells are the shells completion writes scripts for.
var shells = []string{"bash", "zsh", "fish"}

// shellArgs requires one shell.
func shellArgs(_ *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usagef("give one shell: %s", strings.Join(shells, ", "))
	}
	if !slices.Contains(shells, args[0]) {
		return usagef("unknown shell %q: want one of %s%s", args[0], strings.Join(shells, ", "), didYouMean(args[0], suggest(args[0], shells, "")))
	}
	return nil
}

// completionCommand writes root's completion script for the shell.
func completionCommand(root *cobra.Command) runFunc {
	return func(_ context.Context, args []string, stdout, _ io.Writer) error {
		if o, ok := stdout.(*output); ok {
			stdout = o.Writer
		}
		switch args[0] {
		case "bash":
			fmt.Fprint(stdout, bashWordsShim)
			return root.GenBashCompletionV2(stdout, true)
		case "zsh":
			return root.GenZshCompletion(stdout)
		case "fish":
			return root.GenFishCompletion(stdout, true)
		}
		return fmt.Errorf("unknown shell %q", args[0])
	}
}

// bashWordsShim stands in for the bash-completion package's
// _get_comp_words_by_ref, which cobra's bash script calls, where that package is
// not installed: the word being completed, the one before, all of them and the
// index of the current one, split as bash split them.
const bashWordsShim = `# Without the bash-completion package: the words as bash split them.
if ! declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
_get_comp_words_by_ref() {
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD-1]}"
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
}
fi
`

// fileFlags are the flags that name a file to read or write.
var fileFlags = map[string]bool{"in": true, "model-file": true, "cluster-file": true, "free-map": true, "svg": true,
	"layout": true, "out": true, "tls-ca": true, "tls-cert": true, "tls-key": true, "token-file": true}

// registerCompletions tells cobra what each of c's flags takes.
func registerCompletions(c *cobra.Command) {
	if c.Name() == "completion" {
		c.ValidArgs = shells
	}
	if c.Name() == "calibrate" {
		c.ValidArgsFunction = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveDefault // files
		}
	}
	c.Flags().VisitAll(func(f *pflag.Flag) {
		var values func() []string
		switch {
		case f.Name == "cluster":
			values = systemNames
		case f.Name == "model":
			values = modelNames
		case fileFlags[f.Name]:
			_ = c.MarkFlagFilename(f.Name)
			return
		}
		e, isEnum := f.Value.(*enumValue)
		if isEnum {
			values = func() []string { return e.names }
		}
		if values == nil {
			if f.Value.Type() != "bool" {
				_ = c.RegisterFlagCompletionFunc(f.Name, cobra.NoFileCompletions)
			}
			return
		}
		list := isEnum && e.list
		_ = c.RegisterFlagCompletionFunc(f.Name, func(_ *cobra.Command, _ []string, typed string) ([]string, cobra.ShellCompDirective) {
			prefix := ""
			if list { // complete the last name of a list, keeping the ones before
				if i := strings.LastIndex(typed, ","); i >= 0 {
					prefix = typed[:i+1]
				}
			}
			given := strings.Split(prefix, ",")
			var out []string
			for _, v := range values() {
				if strings.HasPrefix(strings.ToLower(prefix+v), strings.ToLower(typed)) && !slices.Contains(given, v) {
					out = append(out, prefix+v)
				}
			}
			d := cobra.ShellCompDirectiveNoFileComp
			if list {
				d |= cobra.ShellCompDirectiveNoSpace
			}
			return out, d
		})
	})
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
