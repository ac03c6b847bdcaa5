package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Each of plan's on/off list flags reads on, off, true and false, in any case
// and with blanks, and refuses any other value naming the flag and the value.
func TestPlanOnOffListsNameTheFlag(t *testing.T) {
	for _, flag := range []string{"--sp", "--overlap-ep", "--fp8-weights", "--offload-activations", "--experts-whole", "--overlap-tp"} {
		code, _, stderr := run("plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "64", "--seq", "2048", flag, "on,maybe")
		// Some are refused as the flags are parsed ("invalid argument \"on,maybe\"
		// for \"--overlap-tp\" flag"), the others as the constraints are read.
		if code == 0 || !strings.Contains(stderr, flag) || !strings.Contains(stderr, "maybe") || !strings.Contains(stderr, "on, off") && !strings.Contains(stderr, "not on or off") {
			t.Errorf("%s on,maybe: exit %d, stderr %q", flag, code, stderr)
		}
	}
	fs := pflag.NewFlagSet("plan", pflag.ContinueOnError)
	opt := newPlanFlags(fs)
	if err := fs.Parse([]string{"--model", "llama3-8b", "--gpus", "8", "--gbs", "64", "--seq", "2048", "--sp", "on, OFF,true", "--overlap-tp", "false"}); err != nil {
		t.Fatal(err)
	}
	q := &planQuery{}
	err := opt.workload(q)
	if c := q.req.Constraints; err != nil || !slices.Equal(c.SP, []bool{true, false, true}) || !slices.Equal(c.OverlapTP, []bool{false}) || c.OverlapEP != nil {
		t.Errorf("--sp 'on, OFF,true' --overlap-tp false: %v, sp %v, overlap-tp %v, overlap-ep %v", err, c.SP, c.OverlapTP, c.OverlapEP)
	}
}
