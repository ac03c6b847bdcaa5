package calibrate_test

import (
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/calibrate"
	"github.com/stepcost/stepcost/estimator/catalog"
)

// A calibration of collective measurements says which NCCL release's rules
// priced them: the base cluster's stated release, or, when it states none, NCCL
// 2.28's (docs/cluster-file.md, nccl), as stepcost collective does; a
// calibration of training logs alone prices no collective measurement and says
// nothing of it.
func TestCalibrateStatesTheNCCLRelease(t *testing.T) {
	var in calibrate.Inputs
	if err := in.Read("ring.txt", read(t, "testdata/h100-ib-ndr/ncclt290-ring.txt"), calibrate.FileLayout{Op: "allreduce", Algo: "ring"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ nccl, want string }{
		{"", "collective measurements priced by NCCL 2.28's rules: the cluster states no release (nccl)"},
		{"2.29", "collective measurements priced by NCCL 2.29, the cluster's release (nccl)"},
	} {
		spec, err := catalog.System("dgx-h100")
		if err != nil {
			t.Fatal(err)
		}
		spec.NCCL = tc.nccl
		rep, err := calibrate.Calibrate("dgx-h100", spec, in)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Join(rep.Notes, "\n"); !strings.Contains(n, tc.want) {
			t.Errorf("nccl %q: notes %q; want %q", tc.nccl, rep.Notes, tc.want)
		}
	}
}
