package clusterfile_test

import (
	"strings"
	"testing"

	"github.com/stepcost/stepcost/cmd/internal/clusterfile"
	"github.com/stepcost/stepcost/estimator/catalog"
)

// What Format writes, Parse reads back as the same cluster, calibrated fields included.
func TestFormatRoundTrip(t *testing.T) {
	for _, name := range []string{"dgx-h100", "aws-p5", "oci-bm-gpu-a100", "gb200-nvl72"} {
		spec, err := catalog.System(name)
		if err != nil {
			t.Fatal(err)
		}
		spec.Name, spec.Nodes = "calibrated-"+name, 4
		spec.NICs.Efficiency, spec.NICs.LatencyUs, spec.Intra.Efficiency = 0.91, 7.5, 0.8
		out, err := clusterfile.Format(spec, []string{"calibrated by stepcost calibrate", "two\nlines"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.HasPrefix(string(out), "# calibrated by stepcost calibrate\n# two\n# lines\n") {
			t.Errorf("%s: comments missing:\n%s", name, out)
		}
		back, err := clusterfile.Parse(out, "x.yaml")
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		if back.NICs.Efficiency != 0.91 || back.NICs.LatencyUs != 7.5 || back.Intra.Efficiency != 0.8 || back.Nodes != 4 {
			t.Errorf("%s: read back %+v %+v", name, back.NICs, back.Intra)
		}
	}
}
