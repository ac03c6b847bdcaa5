package cli

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/planner"
)

// A no-plan reason quoting a switch's constraint list spells it as its flag takes
// it (--cp-variant ulysses, --overlap-ep off), never the API's booleans
// ("--cp-variant [true]"), for every switch flag of plan; --json keeps the API's.
func TestNoPlanSpellsSwitchPinsAsTheirFlags(t *testing.T) {
	for field, vals := range pinValues {
		flag := planFlags[field]
		for api, want := range map[string]string{"[true]": vals["true"], "[false]": vals["false"], "[false true]": vals["false"] + "," + vals["true"]} {
			got := reasonAsFlags("no feasible plan: the constraints leave no layout to search: constraints.tp [3], " + field + " " + api + " on 64 GPUs")
			if w := flag + " " + want; !strings.Contains(got, w) || strings.Contains(got, "true") || strings.Contains(got, "false") {
				t.Errorf("%s %s: %q, want %q", field, api, got, w)
			}
		}
	}
	// Every switch (a []bool constraint the API takes) has its flag's values.
	typ := reflect.TypeFor[planner.Constraints]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.Type == reflect.TypeFor[[]bool]() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if _, ok := pinValues["constraints."+name]; !ok || planFlags["constraints."+name] == "" {
				t.Errorf("constraints.%s: no flag, or no flag values for a no-plan reason", name)
			}
		}
	}
	addr := daemon(t)
	for _, where := range [][]string{nil, {"--server", addr}} {
		for _, tc := range []struct {
			args       []string
			want, json string
		}{
			{[]string{"--cp-variant", "ulysses"}, "--cp-variant ulysses", "constraints.cp_all_to_all [true]"},
			{[]string{"--sp", "off"}, "--sp off", "constraints.sp [false]"},
			{[]string{"--overlap-tp", "on,off"}, "--overlap-tp off,on", "constraints.overlap_tp [false true]"},
		} {
			args := append(append(append([]string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gbs", "64", "--seq", "4096", "--gpus", "64", "--tp", "3"}, tc.args...), where...), "--json")
			code, out, errOut := run(args...)
			if code != exitFailure || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "true") || strings.Contains(errOut, "constraints.") {
				t.Errorf("%q: exit %d, stderr %q; want %q", args, code, errOut, tc.want)
			}
			if !strings.Contains(out, tc.json) {
				t.Errorf("%q: no_plan_reason is not the API's %q:\n%s", args, tc.json, out)
			}
		}
	}
}
