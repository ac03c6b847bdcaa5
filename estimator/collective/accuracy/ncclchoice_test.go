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
