package cli

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// The GPU's memory line gives the GPU's verdict, its own numbers': with offload,
// an estimate whose host part does not fit while the GPU's does was printed
// "memory per GPU (stage 0): 16.4 of 85.9 GB — DOES NOT FIT: -69.5 GB over", the
// verdict of the whole (fits) over the GPU's headroom. The host line says the host
// part does not fit, and the JSON's fits stays false.
func TestGPUMemoryVerdictMatchesItsNumbers(t *testing.T) {
	args := []string{"estimate", "--model", "llama3-405b", "--cluster", "dgx-h100", "--gpus", "8", "--tp", "8", "--mbs", "1", "--gbs", "8", "--seq", "2048",
		"--zero", "3", "--offload", "params", "--recompute", "full"}
	code, js, errOut := run(append(args, "--json")...)
	var resp pb.EstimateStepResponse
	if err := protojson.Unmarshal([]byte(js), &resp); code != exitOK || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, errOut)
	}
	m := resp.GetEstimate().GetMemory()
	if m.GetFits() || m.GetHeadroomGb() <= 0 || m.GetHostGb() <= m.GetHostCapacityGb() {
		t.Fatalf("want a GPU part that fits and a host part that does not: %v", m)
	}
	code, out, errOut := run(args...)
	gpu := fmt.Sprintf("memory per GPU (stage 0): %.1f of %.1f GB — fits, %.1f GB headroom", m.GetTotalGb(), m.GetCapacityGb(), m.GetHeadroomGb())
	host := fmt.Sprintf("host memory per GPU (offload): %.1f of its %.1f GB share — DOES NOT FIT", m.GetHostGb(), m.GetHostCapacityGb())
	if code != exitOK || !strings.Contains(out, gpu) || !strings.Contains(out, host) || strings.Contains(out, "GB over") {
		t.Errorf("exit %d %s\n%s\nwant %q and %q", code, errOut, out, gpu, host)
	}
}
