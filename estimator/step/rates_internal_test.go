package step

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
)

// catalogRates is what k prices a catalog GPU's matmuls at in precision p; the
// test stops if the GPU is unknown or has no rate for p.
func catalogRates(t *testing.T, k *Constants, gpuName string, p Precision) gpuRates {
	t.Helper()
	gpu, err := catalog.GPU(gpuName)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := k.rates(gpu, p)
	if !ok {
		t.Fatalf("no %s rates for %s", p, gpuName)
	}
	return r
}
