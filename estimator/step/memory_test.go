package step

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/model"
)

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Abs(want) }

// 10B parameters on 8 GPUs: the ZeRO paper's accounting with mixed-precision Adam
// (2 + 2 + 12 B) and the seeds' table (2 + 2 + 8 B).
func TestModelStatesPerZeROStage(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Optimizer
		want [4]float64 // GB per GPU under DP / ZeRO-1 / ZeRO-2 / ZeRO-3
	}{
		{"adam fp32 master 2+2+12", AdamMixed(), [4]float64{160, 55, 37.5, 20}},
		{"seeds 2+2+8", Optimizer{WeightBytes: 2, GradBytes: 2, StateBytes: 8}, [4]float64{120, 50, 32.5, 15}},
	} {
		for z := range 4 {
			w, g, s := ModelStateBytes(10e9, tc.opt, z, 8)
			if got := (w + g + s) / 1e9; !near(got, tc.want[z], 1e-9) {
				t.Errorf("%s ZeRO-%d: %.2f GB, want %.2f", tc.name, z, got, tc.want[z])
			}
		}
	}
}

// gptArch is a GPT layer as in Korthikanti et al.: MHA, 4h two-matrix MLP.
func gptArch(h, a int) model.Arch {
	return model.Arch{Name: "gpt", Layers: 1, Hidden: h, Heads: a, KVHeads: a, FFN: 4 * h, Vocab: 51200}
}

// Korthikanti et al. 2022, Table 2: activation bytes per layer.
func TestActivationsKorthikanti(t *testing.T) {
	const s, b, h, a = 2048.0, 4.0, 12288, 96
	arch := gptArch(h, a)
	sbh := s * b * h
	for _, tc := range []struct {
		name string
		tp   int
		sp   bool
		rc   Recompute
		want float64
	}{
		{"no parallelism", 1, false, RecomputeNone, sbh * (34 + 5*a*s/h)},
		{"tensor parallel", 8, false, RecomputeNone, sbh * (10 + 24.0/8 + 5*a*s/(h*8))},
		{"tensor + sequence parallel", 8, true, RecomputeNone, sbh * (34 + 5*a*s/h) / 8},
		{"tensor parallel + selective recompute", 8, false, RecomputeSelective, sbh * (10 + 24.0/8)},
		{"tensor + sequence parallel + selective recompute", 8, true, RecomputeSelective, sbh * 34 / 8},
		{"full recompute", 8, false, RecomputeFull, 2 * sbh},
		{"full recompute with sequence parallel", 8, true, RecomputeFull, 2 * sbh / 8},
	} {
		got := ActivationBytes(arch, false, s, s, b, tc.tp, tc.sp, tc.rc, true)
		if !near(got, tc.want, 1e-12) {
			t.Errorf("%s: %.4g B, want %.4g", tc.name, got, tc.want)
		}
	}
	// Flash attention keeps no score matrix: like selective recompute.
	if got, want := ActivationBytes(arch, false, s, s, b, 1, false, RecomputeNone, false), sbh*34; !near(got, want, 1e-12) {
		t.Errorf("fused attention: %.4g, want %.4g", got, want)
	}
	// GQA and a gated MLP: K and V shrink with g/a, the MLP keeps 3 f-wide tensors.
	l := model.Arch{Name: "llama", Layers: 1, Hidden: 8192, Heads: 64, KVHeads: 8, FFN: 28672, GatedMLP: true, Vocab: 128256}
	sbh = s * b * 8192
	want := sbh*(10+2+4*8.0/64+2) + 6*s*b*28672
	if got := ActivationBytes(l, false, s, s, b, 1, false, RecomputeSelective, true); !near(got, want, 1e-12) {
		t.Errorf("llama-70b layer: %.4g, want %.4g", got, want)
	}
}

// Op-level checkpointing keeps the layer input and the outputs of the matmuls it
// saves — Q, V, the MLP's first matrix, the down projection when gated — and the
// attention output.
func TestActivationsOpLevelCheckpointing(t *testing.T) {
	const s, b = 2048.0, 4.0
	gpt := gptArch(12288, 96)
	sbh := s * b * 12288
	// GPT (MHA, 4h, two matrices): input 2, Q 2, V 2, attention output 2, up 8 (×sbh).
	for _, tc := range []struct {
		name string
		tp   int
		sp   bool
		want float64
	}{
		{"no parallelism", 1, false, 16 * sbh},
		{"tensor parallel", 8, false, 2*sbh + 14*sbh/8},
		{"tensor + sequence parallel", 8, true, 16 * sbh / 8},
	} {
		if got := ActivationBytes(gpt, false, s, s, b, tc.tp, tc.sp, RecomputeOps, false); !near(got, tc.want, 1e-12) {
			t.Errorf("gpt %s: %.4g B, want %.4g", tc.name, got, tc.want)
		}
	}
	// Llama 3 70B (GQA 8 of 64 heads, gated 28672): + V at 1/8 and the down
	// projection's output, whole on every TP rank (saved before its reduction).
	l := model.Arch{Name: "llama", Layers: 1, Hidden: 8192, Heads: 64, KVHeads: 8, FFN: 28672, GatedMLP: true, Vocab: 128256}
	sbh = s * b * 8192
	inside := (2+2*8.0/64+2)*sbh + 2*s*b*28672
	if got, want := ActivationBytes(l, false, s, s, b, 1, false, RecomputeOps, false), 2*sbh+inside+2*sbh; !near(got, want, 1e-12) {
		t.Errorf("llama-70b: %.4g B, want %.4g", got, want)
	}
	if got, want := ActivationBytes(l, false, s, s, b, 8, true, RecomputeOps, false), (2*sbh+inside)/8+2*sbh; !near(got, want, 1e-12) {
		t.Errorf("llama-70b tp 8 + sp: %.4g B, want %.4g", got, want)
	}
}

func TestInFlightMicroBatches(t *testing.T) {
	for _, tc := range []struct {
		s       Schedule
		p, v, m int
		want    float64
	}{
		{OneFOneB, 1, 1, 32, 1},
		{OneFOneB, 8, 1, 32, 8},
		{OneFOneB, 8, 1, 4, 4},
		{GPipe, 8, 1, 32, 32},
		{Interleaved, 8, 4, 32, 8 * (1 + 7.0/32)},
		// M = P: the warm-up runs all M micro-batches through all v chunks, M stages'
		// worth (torchtitan's 405B interleaved run: 8 micro-batches on 8 stages).
		{Interleaved, 8, 2, 8, 8},
		{Interleaved, 8, 2, 9, 9},
		{Interleaved, 8, 2, 16, 8 * (1 + 7.0/16)},
	} {
		if got := inFlight(tc.s, tc.p, tc.v, tc.m); !near(got, tc.want, 1e-12) {
			t.Errorf("%s p=%d v=%d m=%d: %v, want %v", tc.s, tc.p, tc.v, tc.m, got, tc.want)
		}
	}
}
