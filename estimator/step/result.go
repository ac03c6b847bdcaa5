package step

import "encoding/json"

// Comm is the kind of a communication.
type Comm uint8

const (
	CommTP    Comm = iota // tensor-parallel activations (all-reduce, or all-gather + reduce-scatter with SP)
	CommCP                // context-parallel K/V exchange (ring attention)
	CommEP                // expert-parallel dispatch and combine (all-to-all)
	CommPP                // pipeline point-to-point
	CommDP                // data-parallel gradients (and ZeRO-1/2 parameter all-gather)
	CommZeRO3             // ZeRO-3 / FSDP per-layer parameter all-gathers and gradient reduce-scatters
	CommEmbed             // tied-embedding gradient sync between first and last stage
	NumComms              // the number of kinds
)

var commNames = [NumComms]string{"tp", "cp", "ep", "pp", "dp", "zero3", "embedding"}

func (c Comm) String() string { return commNames[c] }

// Breakdown is where the step time goes, in seconds; the fields add up to the step
// time.
type Breakdown struct {
	Forward   float64 `json:"forward_s"`
	Backward  float64 `json:"backward_s"`
	Recompute float64 `json:"recompute_s"`
	// Exposed is communication on the critical path, per kind.
	Exposed [NumComms]float64 `json:"-"`
	// Bubble is the pipeline fill and drain.
	Bubble    float64 `json:"bubble_s"`
	Optimizer float64 `json:"optimizer_s"`
	// Contention is the compute slowdown caused by communication that runs under it
	// (its kernels occupy SMs and HBM bandwidth).
	Contention float64 `json:"contention_s"`
	// Hidden is communication overlapped with compute, per kind (not part of the sum).
	Hidden [NumComms]float64 `json:"-"`
}

// Sum adds the parts of the step time.
func (b Breakdown) Sum() float64 {
	s := b.Forward + b.Backward + b.Recompute + b.Bubble + b.Optimizer + b.Contention
	for _, e := range b.Exposed {
		s += e
	}
	return s
}

// CommCall is one communication of the step, priced by the collective simulator on
// the group it actually runs on.
type CommCall struct {
	Kind       Comm    `json:"-"`
	KindName   string  `json:"kind"`
	Op         string  `json:"collective"`
	Group      int     `json:"group_size"`
	Nodes      int     `json:"group_nodes"`
	Concurrent int     `json:"concurrent_groups"`
	Bytes      float64 `json:"bytes"`
	Algorithm  string  `json:"algorithm"`
	Protocol   string  `json:"protocol"`
	TimeUs     float64 `json:"time_us"` // one call
	// PerStep is how many times the critical path runs it in one step.
	PerStep float64 `json:"calls_per_step"`
	// When says where it runs ("per layer forward", "end of step", …).
	When string `json:"when"`
}

// Throughput of the step.
type Throughput struct {
	TokensPerSec       float64 `json:"tokens_per_s"`
	TokensPerSecPerGPU float64 `json:"tokens_per_s_per_gpu"`
	// MFU counts the model's FLOPs (3 × forward, attention included);
	// HFU also counts recomputation.
	MFU float64 `json:"mfu"`
	HFU float64 `json:"hfu"`
}

// MicroBatch is one micro-batch's pass through the slowest pipeline stage (all its
// model chunks), in seconds, as the step time prices it: the blocks a pipeline
// schedule is made of. Every stage runs at the slowest one's pace.
type MicroBatch struct {
	Forward float64 `json:"forward_s"`
	// Backward is the whole backward pass; WeightGrad is the part of it spent in the
	// weight-gradient GEMMs, which the zero-bubble schedules run separately.
	Backward   float64 `json:"backward_s"`
	WeightGrad float64 `json:"weight_grad_s"`
	// Recompute runs before the backward pass.
	Recompute float64 `json:"recompute_s"`
	// ExposedComm is the tensor-, context- and expert-parallel communication of the
	// micro-batch that no compute hides.
	ExposedComm float64 `json:"exposed_comm_s"`
	// Send is one pipeline send/recv (an activation forward or a gradient backward);
	// 0 without pipeline parallelism.
	Send float64 `json:"pipeline_send_s"`
	// HopSends are the sends hop by hop where the hops cost differently (a hop
	// inside a scale-up domain, another across it): hop h from stage h to stage
	// h + 1, and under interleaving hop p − 1 from the last stage back to the
	// first; nil where every hop costs Send. A rank's forward blocks end with its
	// hop's send, its backward blocks with the previous hop's (RankSends).
	// Shared by the results that price the same hops: read only.
	HopSends []float64 `json:"pipeline_hop_sends_s,omitempty"`
	// SendOverlapped: the steady state's sends run under the next chunk's compute
	// (PipelineSendsOverlap): only the warm-up's and cool-down's lengthen their
	// blocks (BlockTimes.S).
	SendOverlapped bool `json:"pipeline_send_overlapped,omitempty"`
	// SlowGPUSpeed is the what-if's speed of the one slow GPU (in the first stage),
	// whose compute is 1/SlowGPUSpeed times longer; 0 when every GPU is as fast.
	SlowGPUSpeed float64 `json:"slow_gpu_speed,omitempty"`
}

// Result is a step estimate.
type Result struct {
	// Layout and Training as estimated, defaults filled in.
	Layout       Layout     `json:"layout"`
	Training     Training   `json:"training"`
	StepTime     float64    `json:"step_time_s"`
	Breakdown    Breakdown  `json:"breakdown"`
	Memory       Memory     `json:"memory"`
	Throughput   Throughput `json:"throughput"`
	GPUs         int        `json:"gpus"`
	MicroBatches int        `json:"micro_batches"`
	// Layers is the layer count of the slowest pipeline stage.
	StageLayers int        `json:"stage_layers"`
	Comms       []CommCall `json:"communication"`
	Warnings    []string   `json:"warnings"`
	Assumptions []string   `json:"assumptions"`

	// PerMicroBatch are the pipeline's blocks; Pipeline is the time from the first
	// forward to the last backward as the step time prices it (every micro-batch
	// through the slowest stage, the bubble and the exposed pipeline sends). The rest
	// of the step (data-parallel and ZeRO communication, the optimizer, contention,
	// fp8 weight casts) comes before or after it.
	PerMicroBatch MicroBatch `json:"per_micro_batch"`
	Pipeline      float64    `json:"pipeline_s"`
}

// MarshalJSON names the per-kind communication times.
func (b Breakdown) MarshalJSON() ([]byte, error) {
	exposed := make(map[string]float64, NumComms)
	hidden := make(map[string]float64, NumComms)
	for c := range NumComms {
		exposed[c.String()] = b.Exposed[c]
		hidden[c.String()] = b.Hidden[c]
	}
	type plain Breakdown
	return json.Marshal(struct {
		plain
		Exposed map[string]float64 `json:"exposed_comm_s"`
		Hidden  map[string]float64 `json:"hidden_comm_s"`
		Total   float64            `json:"total_s"`
	}{plain(b), exposed, hidden, b.Sum()})
}

// Comms lists the communication kinds in order.
func Comms() []Comm {
	out := make([]Comm, NumComms)
	for i := range out {
		out[i] = Comm(i)
	}
	return out
}
