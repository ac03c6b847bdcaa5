package accuracy_test

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/collective/accuracy"
)

// Where a source records the algorithm NCCL picked by itself (a TUNING log, or a
// sweep run with and without NCCL_ALGO), NCCL's own choice as the model reproduces
// it (ncclchoice.go) is that algorithm on every row: stas00's 8×H200 sweep
// (ring to 1 MiB, NVLS from 2 MiB) and the 8 GiB all-reduces on 4–8 H200 and B200
// of one node (a ring on 4 H200 and on 4 and 5 B200, where the search's fastest
// NVLS channel, 60 and 90 GB/s, caps the NVLS heads). The cheapest of the model's
// prices misses three of them (8×H200 at 2 MiB, 4 H200 and 5 B200 at 8 GiB).
func TestNCCLChoiceMatchesRecordedChoices(t *testing.T) {
	rows, err := accuracy.Rows()
	if err != nil {
		t.Fatal(err)
	}
	cases := accuracy.Cases(rows)
	k := shipped()
	n := 0
	for _, r := range accuracy.Price(collective.NewModel(k.K), accuracy.PrepareWith(cases, k.Links)) {
		if r.Chosen == collective.Auto || r.Err != nil {
			continue
		}
		n++
		if r.Predicted.Algo != r.Chosen {
			t.Errorf("%s: NCCL's choice as modelled %s/%s, the source records %s", r.Row.ID, r.Predicted.Algo, r.Predicted.Protocol, r.Chosen)
		}
	}
	if n < 30 {
		t.Errorf("%d rows record NCCL's choice, want the 32 of stas00's sweeps", n)
	}
}
