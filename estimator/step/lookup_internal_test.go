package step

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/topology"
)

// catalogPair is a catalog model and a catalog system of nodes nodes, the
// starting point of most requests the package's own tests build.
func catalogPair(t *testing.T, modelName, system string, nodes int) (model.Arch, *topology.Cluster) {
	t.Helper()
	a, err := model.Lookup(modelName)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := catalog.Cluster(system, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return a, cl
}
