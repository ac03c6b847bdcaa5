package step_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
)

// Megatron-LM of 2021 (framework.Runs.EvenLayerSplit) splits the layers evenly
// over the pipeline stages and the interleaved chunks, and interleaves only more
// than 2 stages: its estimate refuses every other layout, naming the field, where
// megatron-core prices the same layout. Llama 3 8B has 32 layers.
func TestEvenLayerSplitFramework(t *testing.T) {
	e := step.New()
	estimate := func(framework string, l step.Layout) error {
		t.Helper()
		l.DP, l.MicroBatch = 8/(l.TP*l.PP), 1
		_, err := e.Estimate(step.Request{
			Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 1),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 16 * l.DP, Framework: framework, Optimizer: step.AdamMixed()},
			Layout:   l,
		})
		return err
	}
	for _, c := range []struct {
		name  string
		l     step.Layout
		field string // "": priced under megatron-lm-2021 too
	}{
		{"even pipeline", step.Layout{TP: 4, PP: 2}, ""},
		{"even interleaved over 4 stages", step.Layout{TP: 2, PP: 4, VirtualStages: 2}, ""},
		{"uneven split given", step.Layout{TP: 4, PP: 2, LayerSplit: []int{15, 17}}, "layout.layer_split"},
		{"even split given", step.Layout{TP: 4, PP: 2, LayerSplit: []int{16, 16}}, ""},
		{"24 chunks of 32 layers", step.Layout{TP: 1, PP: 8, VirtualStages: 3}, "layout.pp"},
		{"the loss counted as a layer", step.Layout{TP: 4, PP: 2, AccountForLoss: true}, "layout.account_for_loss"},
		{"interleaving 2 stages", step.Layout{TP: 4, PP: 2, VirtualStages: 2}, "layout.virtual_stages"},
	} {
		if err := estimate("megatron-core", c.l); err != nil {
			t.Errorf("%s under megatron-core: %v", c.name, err)
		}
		err := estimate("megatron-2021", c.l) // the alias resolves to the profile
		var inv *invalid.Error
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s under megatron-lm-2021: %v, want priced", c.name, err)
		case c.field != "" && (!errors.As(err, &inv) || !strings.Contains(err.Error(), c.field+":") || !strings.Contains(err.Error(), "megatron-lm-2021")):
			t.Errorf("%s under megatron-lm-2021: got %v, want an error naming %s and the framework", c.name, err, c.field)
		}
	}
}
