package calibrate

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/stepcost/stepcost/estimator/topology"
)

// A training log that states both its model FLOP/s and its MFU states the peak
// the framework divided by: torchtitan's metric line prints tflops =
// flops_per_token · tps / 1e12 and mfu = 100 · flops_per_token · tps /
// gpu_peak_flops (torchtitan components/metrics.py @ 775a486edd17, the version
// pytorch/ao's tutorial logs in testdata ran), so tflops ÷ mfu × 100 is
// gpu_peak_flops in TFLOP/s, which torchtitan takes from the GPU's name
// (tools/utils.py, get_peak_flops). That peak names the GPU the run ran on, and a
// run of another GPU than the base cluster's is not fitted: its compute scale
// would be that GPU's speed over the base's (an H100 log on dgx-a100 was priced
// 114.9 % slow and the compute fit went to its bound).
//
// The other frameworks whose logs are read state no MFU: Megatron-LM's
// training_log prints "throughput per GPU (TFLOP/s/GPU)" only
// (megatron/training/training.py @ d98e8a64dd), as does Megatron-Bridge
// (src/megatron/bridge/training/utils/train_utils.py @ 067f987df); NeMo 2's
// FLOPsMeasurementCallback logs TFLOPS_per_GPU (nemo/lightning/pytorch/callbacks/
// flops_callback.py @ 8cfedd7203); DeepSpeed's step lines read here carry no
// FLOP/s; Composer's MFU, over a peak per precision the run may set, is not read. For those, and for torchtitan lines without tflops
// (before pytorch/torchtitan 4e3266374, 2025-02-18) or with "mfu: N/A" (under
// fp8 or MX training since f113706c4, 2026-02-28), the check cannot be made and
// the run's notes say so.

// ImpliedPeak is the peak, in TFLOP/s, a training log's metric line implies
// (its model TFLOP/s over its MFU), with the bounds the printed rounding of the
// two figures allows; Line is the file's line (0: the log implies none).
type ImpliedPeak struct {
	TFLOPS, Lo, Hi float64
	Line           int
	// Text is the two figures as printed, for messages ("367.39 ÷ 37.15 %").
	Text string
}

// peakClaim reads the implied peak of a torchtitan metric line t: tflops and mfu
// as printed (f"{tflops:,.2f}", f"{mfu:.2f}%"), each within half a unit of its
// last printed digit. ok is false when the line states no tflops or its mfu is
// not a positive number ("N/A").
func peakClaim(line int, t string) (p ImpliedPeak, hasTFLOPS, ok bool) {
	tf, mf := valueAfter(t, "tflops:"), strings.TrimSuffix(valueAfter(t, "mfu:"), "%")
	tv, tu, tok := printed(tf)
	if !tok {
		return p, false, false
	}
	mv, mu, mok := printed(mf)
	if !mok || mv <= mu {
		return p, true, false
	}
	return ImpliedPeak{TFLOPS: 100 * tv / mv, Lo: 100 * (tv - tu) / (mv + mu), Hi: 100 * (tv + tu) / (mv - mu), Line: line,
		Text: fmt.Sprintf("%s ÷ %s %%", tf, mf)}, true, true
}

// printed reads a positive number as printed ("1,234.56") and half a unit of its
// last digit (0.005).
func printed(s string) (v, half float64, ok bool) {
	s = strings.ReplaceAll(s, ",", "")
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) || strings.ContainsAny(s, "eE") {
		return 0, 0, false
	}
	decimals := 0
	if i := strings.IndexByte(s, '.'); i >= 0 {
		decimals = len(s) - i - 1
	}
	return v, 0.5 * math.Pow(10, -float64(decimals)), true
}

// titanFallback is the peak torchtitan divides by for a GPU its table does not
// name: the A100's, with a warning ("Peak flops undefined for: …, fallback to
// A100", tools/utils.py).
const titanFallback = 312

// titanPeaks are the bf16 peaks (TFLOP/s) torchtitan's get_peak_flops returns
// (tools/utils.py; commits pytorch/torchtitan), named as its table names the
// GPUs. A torchtitan run divides by the bf16 peak also when it trains in fp8:
// the tutorial's fp8 runs print tflops ÷ mfu = 989 on H100 (testdata/trainlogs).
var titanPeaks = []struct {
	tflops float64
	gpus   string
}{
	{titanFallback, "an A100 (or a GPU the torchtitan version's table did not name, which it falls back to the A100's for)"},
	{989, "an H100 SXM or H200 (or another GH100 part when lspci names the chip)"},
	{835, "an H100 NVL"},
	{756, "an H100 PCIe"},
	{148, "an H20"},
	{4500, "a B200 or GB200 (torchtitan 4ee6a2c9c to 890897080, May–July 2025)"},
	{2250, "a B200 or B300 (or a GB200 before torchtitan f113706c4, 2026-02-28)"},
	{2500, "a GB200, GB300 or MI355X"},
	{1300, "an MI300X or MI325X"},
	{362, "an L40S"},
	{191.5, "an MI250X"},
}

// titanPeaksOf are the peaks torchtitan versions that print tflops (from
// 4e3266374, 2025-02-18) divide by on a GPU, by the model gpuModel reads from its
// name; a GPU not listed is one torchtitan's table never names. get_peak_flops
// first takes the lspci lines holding "NVIDIA" and "H100" as the device's name,
// which a GH100 part's line does (pci.ids names them "GH100 [H800 …]"), then
// matches A100, H100 (NVL 835, PCIe 756, else 989), H200, H20, B200, … in turn.
var titanPeaksOf = map[string][]float64{
	"A100": {titanFallback},
	"H100": {989}, // an H100 NVL or PCIe by its name: titanH100
	"H200": {989},
	// GH100 parts the table does not name: 989 by lspci's chip name, else the fallback.
	"H800": {989, titanFallback},
	"H20":  {989, titanFallback, 148},   // named from 62daeb32a (2026-02-02)
	"B200": {titanFallback, 4500, 2250}, // named from 4ee6a2c9c (2025-05-15) at 4.5e15, corrected in 890897080 (2025-07-14)
	// "GB200" holds "B200": the B200's figures until GB200 and GB300 were named
	// in f113706c4 (2026-02-28).
	"GB200":  {titanFallback, 4500, 2250, 2500},
	"B300":   {titanFallback, 2250}, // named from ff95477ea (2026-04-08)
	"GB300":  {titanFallback, 2500}, // named from f113706c4
	"MI300X": {titanFallback, 1300}, // named from 1f532d179 (2025-03-04)
	"MI325X": {titanFallback, 1300},
	"MI355X": {titanFallback, 2500}, // named from e43621cf0 (2025-10-17)
	// torchtitan matches "l40s" in lower case, which the device's name ("NVIDIA
	// L40S") does not hold: the fallback, or 362 if a name ever does.
	"L40S": {titanFallback, 362},
}

// titanH100 is the peak torchtitan divides by on an H100 of that name.
func titanH100(name string) float64 {
	switch n := strings.ToUpper(name); {
	case strings.Contains(n, "NVL"):
		return 835
	case strings.Contains(n, "PCIE"):
		return 756
	}
	return 989
}

// titanGPUs names the GPUs torchtitan divides by peak for ("" when none).
func titanGPUs(peak ImpliedPeak) (float64, string) {
	for _, p := range titanPeaks {
		if peak.Lo <= p.tflops && p.tflops <= peak.Hi {
			return p.tflops, p.gpus
		}
	}
	return 0, ""
}

// sameGPURuns refuses a training log whose implied peak is not one torchtitan
// divides by on the base cluster's GPU, naming its line and both GPUs: its step
// times are another GPU's. The runs the check could not be made for, or could
// not tell apart (the A100's peak is also the one torchtitan falls back to), are
// returned as notes.
func sameGPURuns(base string, spec topology.Spec, runs []Run) ([]string, error) {
	var notes []string
	model := gpuModel(spec.GPU.Name)
	for _, r := range runs {
		if r.Peak.Line == 0 {
			continue // the run's notes say why
		}
		want, known := titanPeaksOf[model]
		if model == "H100" {
			want = []float64{titanH100(spec.GPU.Name)}
		}
		if !known {
			notes = append(notes, fmt.Sprintf("%s: the GPU the run ran on is not checked against the base cluster %s's %s: torchtitan's peak table (tools/utils.py) names no such GPU", r.File, base, spec.GPU.Name))
			continue
		}
		got, gpus := titanGPUs(r.Peak)
		if got > 0 && slices.Contains(want, got) {
			if got == titanFallback && model != "A100" {
				notes = append(notes, fmt.Sprintf("%s:%d: tflops ÷ mfu = %.0f TFLOP/s, the A100's peak, which torchtitan also divides by on a GPU its version did not name: not told apart from a run on the base cluster's %s", r.File, r.Peak.Line, got, spec.GPU.Name))
			}
			continue
		}
		var ran string
		if gpus == "" {
			ran = "no GPU torchtitan names"
		} else {
			ran = "the bf16 peak torchtitan divides by on " + gpus
		}
		wants := make([]string, len(want))
		for i, w := range want {
			wants[i] = strconv.FormatFloat(w, 'f', -1, 64)
		}
		return nil, fileErr(r.File, r.Peak.Line, "tflops ÷ mfu = %s = %.4g TFLOP/s, %s, not on the base cluster %s's %s (%s TFLOP/s): the run's step times are another GPU's; calibrate a base cluster of that GPU",
			r.Peak.Text, r.Peak.TFLOPS, ran, base, spec.GPU.Name, strings.Join(wants, " or "))
	}
	return notes, nil
}

// noPeakWhy says why a log of framework implies no peak (hasTFLOPS: a torchtitan
// line states tflops, so its mfu was not a number).
func noPeakWhy(framework string, hasTFLOPS bool) string {
	switch {
	case framework == "torchtitan" && hasTFLOPS:
		return "its mfu is not a number (torchtitan prints \"mfu: N/A\" under fp8 or MX training since f113706c4, 2026-02-28)"
	case framework == "torchtitan":
		return "its metric lines state no tflops beside their mfu (torchtitan prints tflops since 4e3266374, 2025-02-18)"
	case framework == "megatron-core":
		return "Megatron-LM's and Megatron-Bridge's logs state TFLOP/s per GPU but no MFU, the fraction of a peak that would name the GPU"
	case framework == "nemo":
		return "NeMo's logs state TFLOPS per GPU at most, no MFU, the fraction of a peak that would name the GPU"
	case framework == "composer":
		// SpeedMonitor (composer/callbacks/speed_monitor.py @ 640518880) logs
		// throughput/device/mfu over a peak per precision (amp_bf16, amp_fp8)
		// that the run may set itself (gpu_flops_available).
		return "Composer's throughput/device/mfu is not read (its peak is per precision, and the run may set it: SpeedMonitor's gpu_flops_available)"
	}
	return framework + "'s step lines state no MFU, the fraction of a peak that would name the GPU"
}
