package collective_test

import (
	"errors"
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/topology"
)

// NCCL has no NVLS kernel for the maximum of 32-bit floats (src/include/device.h
// ncclNvlsSupported: fp32 and fp64 take NVLS for sums only), and runs such a call
// on its rings and trees whatever the communicator supports (src/enqueue.cc,
// nvlsSupport gated on ncclNvlsSupported; v2.19.3-1 to v2.29.7-1). Transformer
// Engine's amax all-reduces are such calls. On GB200 NVL72 racks with NVLS on, a
// small sum over a 64-GPU rack (one clique: NCCL's NVLS at 25 µs against a 126-step
// LL ring in its own table) and over two racks (its NVLS tree) runs on NVLS; the
// maximum of fp32 values is then priced exactly as on the same racks with NVLS off,
// and never on NVLS. An all-gather does not reduce and keeps NVLS.
func TestMaxOfFloat32RunsWithoutNVLS(t *testing.T) {
	m := collective.NewModel(collective.Default())
	for _, tc := range []struct {
		name   string
		trays  int
		sumRun collective.Algorithm // what a sum of the same bytes runs with NVLS on
	}{
		{"one rack, 64 GPUs", 16, collective.NVLS},
		{"two racks, 128 GPUs", 32, collective.NVLSTree},
	} {
		rack := func(s *topology.Spec) { s.Intra.DomainNodes = 16 }
		on := mustCluster(t, "gb200-nvl72", tc.trays, rack)
		off := mustCluster(t, "gb200-nvl72", tc.trays, func(s *topology.Spec) { rack(s); s.Intra.NVLS = false })
		place := func(c *topology.Cluster) *collective.Placement {
			g, sib, err := collective.NodeGroups(c, tc.trays, 4, false)
			if err != nil {
				t.Fatal(err)
			}
			return mustPlace(t, c, g, sib)
		}
		pOn, pOff := place(on), place(off)
		const amaxes = 96 // bytes: 24 fp32 amaxes
		sum, err := m.Estimate(pOn, collective.AllReduce, amaxes, collective.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Algo != tc.sumRun {
			t.Errorf("%s: a %d B sum runs %s with NVLS on, want %s", tc.name, amaxes, sum.Algo, tc.sumRun)
		}
		max := collective.Options{Reduction: collective.MaxFloat32}
		got, err := m.Estimate(pOn, collective.AllReduce, amaxes, max)
		if err != nil {
			t.Fatal(err)
		}
		want, err := m.Estimate(pOff, collective.AllReduce, amaxes, collective.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Algo == collective.NVLS || got.Algo == collective.NVLSTree || got.Algo != want.Algo || got.Protocol != want.Protocol || got.TimeUs != want.TimeUs {
			t.Errorf("%s: fp32 maximum with NVLS on %s/%s %.1f µs, want NVLS off's %s/%s %.1f µs", tc.name,
				got.Algo, got.Protocol, got.TimeUs, want.Algo, want.Protocol, want.TimeUs)
		}
		if !(got.TimeUs > sum.TimeUs) {
			t.Errorf("%s: fp32 maximum %.1f µs, not dearer than the sum on NVLS %.1f µs", tc.name, got.TimeUs, sum.TimeUs)
		}
		for _, c := range m.Candidates(pOn, collective.AllReduce, amaxes, max, nil) {
			if c.Algo == collective.NVLS || c.Algo == collective.NVLSTree {
				t.Errorf("%s: %s among the fp32 maximum's candidates", tc.name, c.Algo)
			}
		}
		forced := max
		forced.Algo = sum.Algo
		if _, err := m.Estimate(pOn, collective.AllReduce, amaxes, forced); !errors.Is(err, collective.ErrUnsupported) {
			t.Errorf("%s: %s forced on an fp32 maximum: err %v, want ErrUnsupported", tc.name, sum.Algo, err)
		}
		// An all-gather reduces nothing: the reduction named does not take NVLS from it.
		ag, err := m.Estimate(pOn, collective.AllGather, 64<<20, collective.Options{})
		if err != nil {
			t.Fatal(err)
		}
		agMax, err := m.Estimate(pOn, collective.AllGather, 64<<20, max)
		if err != nil {
			t.Fatal(err)
		}
		if agMax != ag {
			t.Errorf("%s: all-gather %s %.1f µs under MaxFloat32, %s %.1f µs without", tc.name, agMax.Algo, agMax.TimeUs, ag.Algo, ag.TimeUs)
		}
	}
}

// An unknown reduction is refused, naming the field.
func TestUnknownReductionRefused(t *testing.T) {
	m := collective.NewModel(collective.Default())
	c := mustCluster(t, "dgx-h100", 1, nil)
	g, sib, err := collective.NodeGroups(c, 1, 8, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Estimate(mustPlace(t, c, g, sib), collective.AllReduce, 1<<20, collective.Options{Reduction: 200})
	var f *invalid.Error
	if !errors.As(err, &f) || f.Field != "reduction" {
		t.Errorf("reduction 200: err %v, want an invalid field \"reduction\"", err)
	}
}
