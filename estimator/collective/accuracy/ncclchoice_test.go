package accuracy_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/collective/accuracy"
)

// With NCCL's own choice of algorithm and protocol under Auto (Constants.NCCLChoice,
// ncclchoice.go), what Simple's fixed cost of 80 µs still buys is on calls NCCL runs
// with Simple: lowered to 20 µs, every scored collective row whose |log error|
// rises by more than 0.02 runs Simple (the p4d rows over EFA, which carry only
// Simple, and Simple rings and trees of 32 MiB and more). The protocol choice no
// longer holds it (docs/calibration.md, "Constants at a bound").
func TestSimpleFixedCostHeldOnlyBySimpleCalls(t *testing.T) {
	rows, err := accuracy.Rows()
	if err != nil {
		t.Fatal(err)
	}
	cases := accuracy.FitCases(accuracy.Cases(rows))
	k := shipped()
	k.K.NCCLChoice = true
	lo := k
	lo.K.BaseUs[collective.Simple] = 20
	at80 := accuracy.Price(collective.NewModel(k.K), accuracy.PrepareWith(cases, k.Links))
	at20 := accuracy.Price(collective.NewModel(lo.K), accuracy.PrepareWith(cases, lo.Links))
	held := 0
	for i := range at80 {
		a, b := at80[i], at20[i]
		if a.Err != nil || b.Err != nil || !a.Scored {
			continue
		}
		rise := math.Abs(math.Log1p(b.RelErr)) - math.Abs(math.Log1p(a.RelErr))
		if rise <= 0.02 {
			continue
		}
		held++
		if a.Predicted.Protocol != collective.Simple {
			t.Errorf("%s: %s/%s at 80 µs (%+.1f %%), %+.1f %% at 20 µs: a call NCCL runs without Simple pays for Simple's fixed cost",
				a.Row.ID, a.Predicted.Algo, a.Predicted.Protocol, 100*a.RelErr, 100*b.RelErr)
		}
	}
	if held == 0 {
		t.Error("no row loses with Simple's fixed cost at 20 µs: it is no longer held at its bound")
	}
	t.Logf("%d rows lose with Simple's fixed cost at 20 µs, all Simple calls", held)
}

// Where a source records the algorithm NCCL picked by itself (a TUNING log, or a
// sweep run with and without NCCL_ALGO), NCCL's own choice as the model reproduces
// it (Constants.NCCLChoice) is that algorithm on every row: stas00's 8×H200 sweep
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
	k.K.NCCLChoice = true
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
