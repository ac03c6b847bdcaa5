// Package catalog is the embedded hardware catalog: accelerators (hardware.GPU) and
// node/system templates (topology.Spec) with the vendor or cloud document each number
// comes from, plus DecodeSpec, the strict reader of cluster description files.
//
// Every lookup returns a deep copy, so callers may modify what they get without
// touching the catalog. Names are matched after normalisation: case is ignored, and
// spaces and underscores count as hyphens ("H100 SXM5" finds "h100-sxm5").
package catalog

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/topology"
)

// ErrNotFound is wrapped by every error for an unknown GPU or system name.
var ErrNotFound = errors.New("catalog: not found")

// gib is one binary gigabyte in 10^9 bytes. Vendors quote HBM capacity in binary
// units ("80GB" is 80 GiB), while hardware.GPU.MemoryGB is in 10^9 bytes.
const gib = 1.073741824

// GPU returns the accelerator called name (a canonical name or an alias, see the
// package documentation and docs/cluster-file.md).
func GPU(name string) (hardware.GPU, error) {
	i, ok := gpuIndex[normalise(name)]
	if !ok {
		return hardware.GPU{}, notFound("GPU", name, gpuNames())
	}
	return cloneGPU(gpuTable[i].gpu), nil
}

// GPUs returns every accelerator of the catalog, sorted by name.
func GPUs() []hardware.GPU {
	out := make([]hardware.GPU, len(gpuTable))
	for i, e := range gpuTable {
		out[i] = cloneGPU(e.gpu)
	}
	slices.SortFunc(out, func(a, b hardware.GPU) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// System returns the system template called name: one node (Nodes = 1) of the
// system; set Nodes (or use Cluster) for a cluster of them.
func System(name string) (topology.Spec, error) {
	i, ok := systemIndex[normalise(name)]
	if !ok {
		return topology.Spec{}, notFound("system", name, systemNames())
	}
	return cloneSpec(systemTable[i].spec), nil
}

// Systems returns every system template, sorted by name.
func Systems() []topology.Spec {
	out := make([]topology.Spec, len(systemTable))
	for i, e := range systemTable {
		out[i] = cloneSpec(e.spec)
	}
	slices.SortFunc(out, func(a, b topology.Spec) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Cluster builds a cluster of nodes nodes of the named system.
func Cluster(system string, nodes int) (*topology.Cluster, error) {
	s, err := System(system)
	if err != nil {
		return nil, err
	}
	s.Nodes = nodes
	return s.Build()
}

// normalise folds a name for lookup: trimmed, lower case, '_' and ' ' as '-'.
func normalise(name string) string {
	name = strings.ToLower(strings.TrimSpace(name))
	return strings.NewReplacer("_", "-", " ", "-").Replace(name)
}

func notFound(kind, name string, known []string) error {
	return &notFoundError{rule: unknownRule(kind, name, known)}
}

func unknownRule(kind, name string, known []string) string {
	return fmt.Sprintf("unknown %s %q; known: %s", kind, name, strings.Join(known, ", "))
}

// notFoundError is an unknown name; it matches ErrNotFound with errors.Is.
type notFoundError struct{ rule string }

// Error is the rule alone: the caller's flag or field comes first
// ("cluster.name: unknown system …"), and a "catalog:" prefix said nothing more.
func (e *notFoundError) Error() string        { return e.rule }
func (e *notFoundError) Is(target error) bool { return target == ErrNotFound }

func cloneGPU(g hardware.GPU) hardware.GPU {
	g.PeakTFLOPS = maps.Clone(g.PeakTFLOPS)
	return g
}

func cloneSpec(s topology.Spec) topology.Spec {
	s.GPU = cloneGPU(s.GPU)
	s.NICs.GPUNIC = slices.Clone(s.NICs.GPUNIC)
	s.Algorithms = slices.Clone(s.Algorithms)
	return s
}

// gpuEntry and systemEntry pair a catalog value with its lookup aliases (written
// naturally; they are normalised when the index is built).
type gpuEntry struct {
	gpu     hardware.GPU
	aliases []string
}

type systemEntry struct {
	spec    topology.Spec
	aliases []string
}

// The indexes map a normalised name or alias to a position in the tables. They are
// built once from the tables and never written afterwards.
var (
	gpuIndex    = buildIndex(len(gpuTable), func(i int) (string, []string) { return gpuTable[i].gpu.Name, gpuTable[i].aliases })
	systemIndex = buildIndex(len(systemTable), func(i int) (string, []string) {
		return systemTable[i].spec.Name, systemTable[i].aliases
	})
)

func buildIndex(n int, entry func(int) (string, []string)) map[string]int {
	idx := make(map[string]int)
	for i := range n {
		name, aliases := entry(i)
		for _, k := range append([]string{name}, aliases...) {
			idx[normalise(k)] = i
		}
	}
	return idx
}

func gpuNames() []string {
	out := make([]string, len(gpuTable))
	for i, e := range gpuTable {
		out[i] = e.gpu.Name
	}
	slices.Sort(out)
	return out
}

func systemNames() []string {
	out := make([]string, len(systemTable))
	for i, e := range systemTable {
		out[i] = e.spec.Name
	}
	slices.Sort(out)
	return out
}
