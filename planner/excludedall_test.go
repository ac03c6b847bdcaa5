package planner_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// exclude_nodes that leave no free GPU are refused saying what is true: with a
// free map, the excluded nodes are all it lists and the cluster's others have no
// GPU free (they are still nodes of the cluster: "no node of the cluster is
// left" was not so), naming the free map; without one, every node is excluded.
func TestExcludingEveryFreeNodeSaysSo(t *testing.T) {
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	for name, tc := range map[string]struct {
		free    planner.FreeMap
		exclude []int
		want    []string
	}{
		"the free map's nodes": {planner.FreeMap{0: all, 1: {0, 1, 2, 3}}, []int{1, 0},
			[]string{"excludes nodes 0, 1, every node cluster.free_gpus lists (2)", "the cluster's 2 other nodes have no free GPU"}},
		"the free map's node and one more": {planner.FreeMap{2: all}, []int{2, 3, 0},
			[]string{"excludes nodes 0, 2, 3, every node cluster.free_gpus lists (1)", "the cluster's 1 other node has no free GPU"}},
		"every node, free map": {planner.FreeMap{2: all}, []int{0, 1, 2, 3},
			[]string{"excludes nodes 0, 1, 2, 3, every node of the cluster's 4 (cluster.nodes)"}},
		"every node": {nil, []int{3, 2, 1, 0},
			[]string{"excludes nodes 0, 1, 2, 3, every node of the cluster's 4 (cluster.nodes)"}},
	} {
		req := llama8bRequest(t)
		req.GPUs, req.Training.GlobalBatch = 8, 64
		req.Free, req.ExcludeNodes = tc.free, tc.exclude
		_, err := planner.Search(context.Background(), step.New(), req)
		var fe *invalid.Error
		if !errors.As(err, &fe) || fe.Field != "exclude_nodes" {
			t.Errorf("%s: got %v, want an exclude_nodes error", name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(fe.Rule, w) || strings.Contains(fe.Rule, "no node of the cluster is left") {
				t.Errorf("%s: %q does not say %q", name, fe.Rule, w)
			}
		}
	}
}
