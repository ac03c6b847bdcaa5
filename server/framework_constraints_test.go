package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// planREST posts an EstimatePlan body to the daemon's REST gateway and decodes the
// answer, failing the test on anything but 200.
func planREST(t *testing.T, d daemon, body string) *pb.EstimatePlanResponse {
	t.Helper()
	resp, raw := post(t, "http://"+d.httpAddr+"/v1/plans:estimate", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: HTTP %d: %s", body, resp.StatusCode, raw)
	}
	var out pb.EstimatePlanResponse
	if err := protojson.Unmarshal(raw, &out); err != nil {
		t.Fatalf("decoding the answer: %v", err)
	}
	return &out
}

// constraints.even_split over REST: Llama 3 8B's 32 layers on 3 pipeline stages
// take an uneven split without it and no plan with it (the answer says which
// field); with the pipeline depth left to the planner, every plan keeps the same
// number of layers on every stage and model chunk.
func TestEvenSplitOverREST(t *testing.T) {
	d := startDaemon(t, nil)
	defer func() {
		if err := d.stop(); err != nil {
			t.Error(err)
		}
	}()
	const job = `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 96},
		"gpus": 24, "top_k": 10, "constraints": %s}`
	res := planREST(t, d, fmt.Sprintf(job, `{"pp": [3]}`))
	if len(res.GetPlans()) == 0 {
		t.Fatalf("32 layers on 3 stages without even_split: no plan (%s)", res.GetNoPlanReason())
	}
	for _, p := range res.GetPlans() {
		if l := p.GetLayout(); len(l.GetLayerSplit()) != 3 {
			t.Errorf("32 layers on 3 stages: plan without a 3-stage layer split: %v", l)
		}
	}
	res = planREST(t, d, fmt.Sprintf(job, `{"pp": [3], "even_split": true}`))
	if len(res.GetPlans()) > 0 {
		t.Errorf("32 layers on 3 stages with even_split: plan %v", res.GetPlans()[0].GetLayout())
	}
	if !strings.Contains(res.GetNoPlanReason(), "constraints.even_split") {
		t.Errorf("no plan with even_split: the reason does not name the field: %q", res.GetNoPlanReason())
	}
	res = planREST(t, d, fmt.Sprintf(job, `{"even_split": true}`))
	if len(res.GetPlans()) == 0 {
		t.Fatalf("even_split: no plan (%s)", res.GetNoPlanReason())
	}
	for _, p := range append(res.GetPlans(), res.GetPareto()...) {
		l := p.GetLayout()
		if v := max(1, l.GetVirtualStages()); 32%(l.GetPp()*v) != 0 || len(l.GetLayerSplit()) > 0 {
			t.Errorf("even_split: plan pp %d v %d layer_split %v", l.GetPp(), l.GetVirtualStages(), l.GetLayerSplit())
		}
	}
}

// constraints.experts_whole over REST: Mixtral 8x7B on 32 H100 with TP 2 or 4
// holds its experts whole on each TP rank (etp 1) in the best plans when both are
// searched; [false] leaves only plans whose experts split like the dense MLP
// (etp 0: TP's), [true] only plans with TP and SP that hold them whole.
func TestExpertsWholeOverREST(t *testing.T) {
	d := startDaemon(t, nil)
	defer func() {
		if err := d.stop(); err != nil {
			t.Error(err)
		}
	}()
	const job = `{"model": {"name": "mixtral-8x7b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 256},
		"gpus": 32, "top_k": 5, "constraints": {"tp": [2, 4]%s}}`
	whole := func(l *pb.Layout) bool { return l.GetEtp() == 1 && l.GetTp() > 1 && l.GetSp() }
	res := planREST(t, d, fmt.Sprintf(job, ""))
	if len(res.GetPlans()) == 0 || !whole(res.GetPlans()[0].GetLayout()) {
		t.Fatalf("both searched: the best plan does not hold the experts whole, so pinning shows nothing: %v (%s)", res.GetPlans(), res.GetNoPlanReason())
	}
	for _, pin := range []bool{false, true} {
		res := planREST(t, d, fmt.Sprintf(job, fmt.Sprintf(`, "experts_whole": [%v]`, pin)))
		if len(res.GetPlans()) == 0 {
			t.Fatalf("experts_whole [%v]: no plan (%s)", pin, res.GetNoPlanReason())
		}
		for _, p := range append(res.GetPlans(), res.GetPareto()...) {
			l := p.GetLayout()
			if pin && l.GetTp() > 1 && l.GetSp() && l.GetEtp() != 1 || !pin && l.GetEtp() == 1 {
				t.Errorf("experts_whole [%v]: plan tp %d sp %v ep %d etp %d", pin, l.GetTp(), l.GetSp(), l.GetEp(), l.GetEtp())
			}
		}
	}
}
