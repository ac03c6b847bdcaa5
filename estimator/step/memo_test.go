package step

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/collective"
)

// The collective-cost memo returns what the collective model returns, and a
// generation that fills up is replaced, so the memo never holds much more than
// maxMemoCosts entries however many sizes an estimator sees.
func TestCollectiveCostMemo(t *testing.T) {
	cl, err := catalog.Cluster("dgx-h100", 2)
	if err != nil {
		t.Fatal(err)
	}
	e := New()
	p, err := collective.Place(cl, []int{0, 1, 2, 3, 4, 5, 6, 7}, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := e.costs.Load()
	for i := 1; i <= maxMemoCosts+10; i++ {
		bytes := float64(i) * 4096
		got, err := e.collCost(p, collective.AllReduce, bytes)
		if err != nil {
			t.Fatal(err)
		}
		if i%4099 == 1 {
			want, _ := e.coll.Estimate(p, collective.AllReduce, bytes, collective.Options{})
			if got != want {
				t.Fatalf("%v bytes: memo %+v, model %+v", bytes, got, want)
			}
			// Asked again, the memo answers the same.
			if again, _ := e.collCost(p, collective.AllReduce, bytes); again != want {
				t.Fatalf("%v bytes: second answer %+v, want %+v", bytes, again, want)
			}
		}
	}
	cur := e.costs.Load()
	if cur == first {
		t.Fatal("the memo generation was never replaced")
	}
	if n := cur.n.Load(); n < 1 || n > 64 {
		t.Errorf("new generation holds %d entries, want the few stored since the swap", n)
	}
}
