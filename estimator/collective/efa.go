package collective

import (
	"math"
	"strings"

	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/topology"
)

// AWS's OFI plugin (aws/aws-ofi-nccl) carries its own NCCL tuner. On the EC2
// platforms it recognises (p5/p5e, p5en, p6-b200, p6-b300: TunerProcessConfig
// reads the instance type) it does not price algorithms: it looks the call up in
// fixed regions of the (message size, ranks) plane, measured by AWS per platform,
// and forces the algorithm and protocol of the region the call falls in
// (src/tuner/nccl_ofi_regions.cpp, region_get_coll_info_internal_v3: the chosen
// cell of NCCL's cost table is set to 0). NCCL's own model, and the model here,
// would choose the cheapest algorithm instead; on EFA the two part over wide size
// ranges (on 4 p5 nodes the regions run a 1 MiB all-reduce as a double tree with
// LL128 where the cheapest is the NVLS tree, and 64 MiB as a ring with LL128).
//
// When it applies (region_get_coll_info_internal_v3, nccl_ofi_tuner_init_v2):
//   - groups of 3 nodes or more: on 2 nodes the regions "are not well defined" and
//     NCCL's own tuning runs (commit fec074ac, 2025-02-07);
//   - no NCCL_ALGO or NCCL_PROTO set: through NCCL's v2 tuner interface the plugin
//     then leaves tuning to NCCL, through the later ones NCCL drops the regions whose
//     algorithm or protocol they exclude; the model skips the regions when an
//     algorithm or protocol is forced;
//   - an algorithm NCCL marks inapplicable is skipped (the next region, or NCCL's
//     own choice outside every region).
//
// The regions below are AWS's all-reduce regions for 8 ranks per node and for one
// rank per node on p5/p5e and p6-b200, transcribed from nccl_ofi_regions.cpp at aws-ofi-nccl
// commit 2daf7d303aa139a03140aa530957d10521e4478d (after v1.21.1); a vertex is
// (bytes, ranks). p5/p5e's regions date from the region tuner's first release
// (2024-07), p6-b200's from 2025-05. The other collectives' regions (p6-b200's
// all-gather and reduce-scatter, p5en and p6-b300) are not carried: the model's
// own choice prices them.

// ofiPlatform is an EC2 platform with tuner regions.
type ofiPlatform uint8

const (
	ofiNone ofiPlatform = iota
	ofiP5               // p5.48xlarge, p5e.48xlarge: H100/H200, 32 × 100 Gb/s EFA v2
	ofiP6               // p6-b200.48xlarge: B200, 8 × 400 Gb/s EFA v4
)

// ofiPlatformOf recognises the platform from the cluster description: EFA whose
// network delivers LL128 (not p4d/p4de, which run Simple only), NVSwitch nodes of
// 8 GPUs, and the GPU generation: Hopper is p5/p5e, unless its NICs are 200 Gb/s
// (p5en's 16 × 200 Gb/s EFA v3, which has regions of its own); Blackwell is
// p6-b200, unless the GPU is a B300 (p6-b300).
func ofiPlatformOf(s *topology.Spec) ofiPlatform {
	if s.NICs.Kind != topology.EFA || s.NICs.SimpleProtocolOnly || s.GPUsPerNode != 8 ||
		s.Intra.Kind != topology.NVSwitch || s.Intra.DomainNodes > 1 {
		return ofiNone
	}
	switch s.GPU.Arch {
	case hardware.Hopper:
		if s.NICs.Gbps == 200 {
			return ofiNone
		}
		return ofiP5
	case hardware.Blackwell:
		if strings.Contains(strings.ToUpper(s.GPU.Name), "B300") {
			return ofiNone
		}
		return ofiP6
	}
	return ofiNone
}

// ofiPoint is a point of the tuner's plane in log2 coordinates (size 0 is taken
// as 1e-6 bytes, as the plugin does).
type ofiPoint struct{ x, y float64 }

func ofiPt(bytes, ranks float64) ofiPoint {
	const tiny = 1e-6
	return ofiPoint{math.Log2(max(bytes, tiny)), math.Log2(max(ranks, tiny))}
}

// The plugin's far corner of the plane (nccl_ofi_tuner_region.h): 100 GiB, 2^20 ranks.
var ofiMax = ofiPt(100*(1<<30), 1<<20)

// ofiExtend continues the line through a and b (log2 plane) to the far corner's
// column or row, whichever it reaches first — how the plugin closes a region's
// open side (extend_region).
func ofiExtend(a, b ofiPoint) ofiPoint {
	switch {
	case a.x == b.x:
		return ofiPoint{a.x, ofiMax.y}
	case a.y == b.y:
		return ofiPoint{ofiMax.x, a.y}
	}
	m := (a.y - b.y) / (a.x - b.x)
	c := b.y - m*b.x
	if y := m*ofiMax.x + c; y < ofiMax.y {
		return ofiPoint{ofiMax.x, y}
	}
	return ofiPoint{(ofiMax.y - c) / m, ofiMax.y}
}

type ofiRegion struct {
	algo  Algorithm
	proto Protocol
	poly  []ofiPoint
}

// contains says whether q is inside the polygon or on its boundary (the plugin
// counts a point on an edge as inside).
func (r *ofiRegion) contains(q ofiPoint) bool {
	const eps = 1e-9
	n := len(r.poly)
	inside := false
	for i := range n {
		a, b := r.poly[i], r.poly[(i+1)%n]
		// on the segment a–b?
		dx, dy := b.x-a.x, b.y-a.y
		if cross := dx*(q.y-a.y) - dy*(q.x-a.x); math.Abs(cross) <= eps*math.Max(1, math.Hypot(dx, dy)) {
			if q.x >= math.Min(a.x, b.x)-eps && q.x <= math.Max(a.x, b.x)+eps &&
				q.y >= math.Min(a.y, b.y)-eps && q.y <= math.Max(a.y, b.y)+eps {
				return true
			}
		}
		// even-odd rule, a ray towards +x
		if (a.y > q.y) != (b.y > q.y) {
			if x := a.x + (q.y-a.y)*dx/dy; x > q.x {
				inside = !inside
			}
		}
	}
	return inside
}

func ofiPoly(pts ...ofiPoint) []ofiPoint { return pts }

// ofiKey picks a region set: the platform and the ranks per node (AWS measured 8, a
// whole node, and 1, one GPU per node as a tensor-parallel job's data-parallel groups
// have; other shapes fall back to NCCL).
type ofiKey struct {
	platform ofiPlatform
	perNode  int
}

var ofiAllReduceRegions = map[ofiKey][]ofiRegion{
	{ofiP5, 1}: func() []ofiRegion {
		p := ofiPt
		treeLL128 := ofiExtend(p(9999360, 64), p(119477248, 128))
		ringLL128 := ofiExtend(p(4736000, 2), p(269484032, 128))
		return []ofiRegion{
			{DoubleTree, LL128, ofiPoly(p(0, 16), p(2367488, 16), p(9999360, 64), p(119477248, 128), treeLL128,
				ofiPoint{ofiPt(0, 1).x, ofiMax.y})},
			{Ring, LL128, ofiPoly(p(0, 2), p(4736000, 2), p(269484032, 128), ringLL128, treeLL128,
				p(119477248, 128), p(9999360, 64), p(2367488, 16), p(0, 16))},
			{Ring, Simple, ofiPoly(p(4736000, 2), ofiPoint{ofiMax.x, 1}, ringLL128, p(269484032, 128))},
		}
	}(),
	{ofiP6, 1}: func() []ofiRegion {
		p := ofiPt
		const maxSize = 107374182400 // TUNER_MAX_SIZE, written out in these regions
		return []ofiRegion{
			{DoubleTree, LL, ofiPoly(p(0, 2), p(32768, 2), p(32768, 128), p(32768, 131072), p(0, 131072))},
			{DoubleTree, LL128, ofiPoly(p(32768, 2), p(131072, 2), p(8388608, 128), p(8589934592, 131072),
				p(32768, 131072), p(32768, 128))},
			{Ring, LL128, ofiPoly(p(131072, 2), p(3145728, 2), p(297795584, 128), p(maxSize, 45916),
				p(maxSize, 59831), p(164626432, 128), p(20971520, 48), p(3145728, 48))},
			{DoubleTree, Simple, ofiPoly(p(3145728, 48), p(20971520, 48), p(164626432, 128), p(maxSize, 59831),
				p(maxSize, 131072), p(8589934592, 131072))},
			{Ring, Simple, ofiPoly(p(3145728, 2), p(maxSize, 2), p(maxSize, 45916), p(297795584, 128))},
		}
	}(),
	{ofiP5, 8}: func() []ofiRegion {
		p := ofiPt
		treeLL128 := ofiExtend(p(402653184, 2048), p(402653184, 4096))
		nvlsTree1 := ofiExtend(p(8053063680, 160), p(9663676416, 192))
		return []ofiRegion{
			{DoubleTree, LL128, ofiPoly(p(0, 16), p(31457280, 16), p(37748736, 32), p(117440512, 64),
				p(301989888, 128), p(301989888, 256), p(335544320, 512), p(536870912, 1024),
				p(402653184, 2048), p(402653184, 4096), treeLL128, ofiPoint{ofiPt(0, 1).x, treeLL128.y})},
			{NVLSTree, Simple, ofiPoly(p(31457281, 16), ofiPoint{ofiMax.x, 4}, p(31457281, 16))},
			{Ring, LL128, ofiPoly(p(31457280, 17), p(1073741824, 17), p(2147483648, 64), p(2147483648, 128),
				p(1342177280, 160), p(2147483648, 256), p(1074790400, 256), p(444596224, 160),
				p(301989888, 128), p(117440512, 64), p(37748736, 32))},
			{NVLSTree, Simple, ofiPoly(p(2147483648, 128), p(6442450944, 128), p(8053063680, 160),
				p(9663676416, 192), nvlsTree1, treeLL128, p(402653184, 4096), p(402653184, 2048),
				p(536870912, 1024), p(335544320, 512), p(301989888, 256), p(310378496, 160),
				p(444596224, 160), p(1074790400, 256), p(2684354560, 256), p(2147483648, 224),
				p(1342177280, 160))},
			{Ring, Simple, ofiPoly(p(1073741824, 17), ofiPoint{nvlsTree1.x, ofiPt(0, 17).y}, nvlsTree1,
				p(9663676416, 192), p(8053063680, 160), p(2684354560, 64), p(1610612736, 32))},
		}
	}(),
	{ofiP6, 8}: func() []ofiRegion {
		p := ofiPt
		treeLL := ofiExtend(p(393216, 16), p(393216, 1024))
		treeLL128 := ofiExtend(p(96993280, 1024), p(106430464, 2048))
		nvlsTree := ofiExtend(p(10737418240, 512), p(34359738368, 1500))
		return []ofiRegion{
			{DoubleTree, LL, ofiPoly(p(0, 16), p(393216, 16), treeLL, ofiPoint{ofiPt(0, 1).x, ofiMax.y})},
			{DoubleTree, LL128, ofiPoly(treeLL, p(393216, 16), p(4718592, 16), p(18350080, 32),
				p(40370176, 64), p(57147392, 128), p(72876032, 256), p(96993280, 1024),
				p(106430464, 2048), treeLL128)},
			{Ring, LL128, ofiPoly(p(90701824, 128), p(50855936, 64), p(18350080, 32), p(133693440, 32),
				p(120061952, 64))},
			{NVLSTree, Simple, ofiPoly(treeLL128, p(106430464, 2048), p(96993280, 1024), p(72876032, 256),
				p(57147392, 128), p(40370176, 64), p(18350080, 32), p(50855936, 64), p(90701824, 128),
				p(120061952, 64), p(133693440, 32), p(18350080, 32), p(4718592, 16),
				ofiPoint{ofiMax.x, 4}, p(435159040, 32), p(1072693248, 64), p(10737418240, 512),
				p(34359738368, 1500), nvlsTree)},
			{Ring, Simple, ofiPoly(nvlsTree, p(10737418240, 512), p(1072693248, 64), p(435159040, 32),
				ofiPoint{ofiMax.x, 4})},
		}
	}(),
}

// ofiTunerChoice is the algorithm and protocol AWS's OFI tuner forces for op on
// the placement, when it applies (see above): the first region, in the plugin's
// order, that holds (bytes, ranks) and whose algorithm runs here.
func (m *Model) ofiTunerChoice(p *Placement, op Op, bytes float64) (Algorithm, Protocol, bool) {
	if op != AllReduce || p.Domains < 3 || !p.Uniform {
		return Auto, 0, false
	}
	regions := ofiAllReduceRegions[ofiKey{ofiPlatformOf(&p.Cluster.Spec), p.PerDomain}]
	q := ofiPt(bytes, float64(p.N()))
	for i := range regions {
		r := &regions[i]
		if m.why(p, op, r.algo) != "" {
			continue // NCCL marks it inapplicable: the plugin tries the next region
		}
		if r.contains(q) {
			return r.algo, r.proto, true
		}
	}
	return Auto, 0, false
}
