package cli

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/stepcost/stepcost/estimator/step"
)

// trainingSwitches are the training's switches estimate and plan both take and
// read the same way: fp8 activations, dropout, the MoE dispatcher's and
// experts' kernels, CUDA graphs, the groups' NCCL thread blocks, the hardware
// queues and the data-parallel bucket size.
type trainingSwitches struct {
	fp8Acts       *bool
	fp8KV16       *bool
	noDropout     *bool
	moePad        *bool
	dispatcher    *string
	permuteFusion *bool
	routerFP32    *bool
	groupedGEMM   *bool
	cudaGraphs    *bool
	cpMaxCTAs     *int
	dpMaxCTAs     *int
	tpMaxCTAs     *int
	queues        *int
	dpBucket      *float64
}

func addTrainingSwitches(fs *pflag.FlagSet) *trainingSwitches {
	s := &trainingSwitches{}
	s.fp8Acts = fs.Bool("fp8-activations", false, "with --precision fp8: keep the matmul and activation-function inputs saved for the backward pass in fp8, the attention output in 12 bits (DeepSeek-V3; default: the framework's)")
	s.fp8KV16 = fs.Bool("fp8-kv-16bit", false, "with --precision fp8: the attention's key and value projections stay 16-bit linears (torchtitan's fp8 filter_fqns attention.wk and attention.wv, as torchao's Llama 4 Scout MXFP8 run set them); priced under the torchtitan profiles on a model without MLA")
	s.noDropout = fs.Bool("no-dropout", false, "the model trains without dropout: no dropout masks saved (Llama 3, Qwen3, DeepSeek-V3)")
	s.moePad = fs.Bool("moe-pad-to-capacity", false, "with --moe-capacity: pad every expert's input to its capacity, so experts compute and all-to-alls carry capacity × the mean tokens (--moe-pad-expert-input-to-capacity)")
	s.dispatcher = enumFlag(fs, "moe-dispatcher", "", "MoE token dispatcher: alltoall (one copy per routed expert) or deepep (one copy per node a token reaches, then NVLink); default: the framework's", dispatcherNames)
	s.permuteFusion = fs.Bool("moe-permute-fusion", false, "the MoE token permutation runs as fused kernels (Megatron-Core's --moe-permute-fusion; default: the framework's)")
	s.routerFP32 = fs.Bool("moe-router-fp32", false, "the MoE router scores tokens in fp32 (Megatron-Core's --moe-router-dtype fp32; under megatron-core-0.12 and nemo-25.04 its GEMMs run at the fp32 rate)")
	s.groupedGEMM = fs.Bool("moe-grouped-gemm", false, "the routed experts run as Megatron-Core's TEGroupedMLP, Transformer Engine GroupedLinear modules (--moe-grouped-gemm; NeMo's Llama4Config and DeepSeekConfig set it); under fp8 on nemo-25.04 it copies the experts' tokens through Transformer Engine's fp8 padding and unpadding; default: SequentialMLP")
	s.cudaGraphs = fs.Bool("cuda-graphs", false, "replay each layer's kernels from CUDA graphs, one launch per layer; an MoE block is captured up to the dropless dispatcher's host sync, whole with --moe-pad-to-capacity (Megatron-Core's --enable-cuda-graph, NeMo's enable_cuda_graph)")
	s.cpMaxCTAs = fs.Int("cp-nccl-max-ctas", 0, "NCCL thread blocks (maxCTAs) of the context-parallel group: the ring attention's K/V and dK/dV sends run on at most this many channels, each at one thread block's copy rate (Megatron-Core's nccl_communicator_config_path, its cp max_ctas; NeMo's MLPerf Llama 3.1 configs set 1); 0: NCCL's default")
	s.dpMaxCTAs = fs.Int("dp-nccl-max-ctas", 0, "NCCL thread blocks (maxCTAs) of the data-parallel groups: the gradient reduce-scatters or all-reduces and the parameter all-gathers run on at most this many rings, so a ring across scale-up domains crosses the network through this many GPUs' NICs (Megatron-Core's nccl_communicator_config_path, its dp and dp_cp max_ctas; NeMo's MLPerf Llama 3.1 configs set 8); 0: NCCL's default")
	s.tpMaxCTAs = fs.Int("tp-nccl-max-ctas", 0, "NCCL thread blocks (maxCTAs) of the tensor-parallel group: the TP collectives NCCL runs use at most this many channels, not those of --overlap-tp (Megatron-Core's nccl_communicator_config_path, its tp max_ctas; NeMo's MLPerf Llama 3.1 configs set 8); 0: NCCL's default")
	s.queues = fs.Int("cuda-device-max-connections", 0, "hardware work queues the job runs with (CUDA_DEVICE_MAX_CONNECTIONS, 1 to 32): with 1 the kernels start in launch order, so under --overlap-ep the forward's dispatch runs beside no compute (the Megatron-Core MoE team's Qwen3 configs set 1); 0: what the framework's launch sets for the layout (Megatron-LM's validate_args, NeMo's PerfEnvPlugin), else CUDA's 8")
	s.dpBucket = fs.Float64("dp-bucket-params", 0, "parameters per data-parallel gradient bucket, e.g. 40e6: the last bucket of each gradient buffer is reduced after the backward pass (Megatron-Core's --ddp-bucket-size; 0: the framework's, Megatron-Core's max(40e6, 1e6 × DP), else PyTorch DDP's 25 MB)")
	return s
}

// apply sets in t the switches given (set: the flags given by name); what is
// not given keeps t's value (an --in file's, or the zero value: the
// framework's default).
func (s *trainingSwitches) apply(set map[string]bool, t *step.Training) error {
	if set["fp8-activations"] {
		t.FP8Activations = *s.fp8Acts
	}
	if set["fp8-kv-16bit"] {
		t.FP8KVIn16Bits = *s.fp8KV16
	}
	if set["no-dropout"] {
		t.NoDropout = *s.noDropout
	}
	if set["moe-pad-to-capacity"] {
		t.MoEPadToCapacity = *s.moePad
	}
	if set["moe-dispatcher"] {
		t.MoEDispatcher = strings.ToLower(*s.dispatcher)
	}
	if set["moe-permute-fusion"] {
		t.MoEPermuteFusion = *s.permuteFusion
	}
	if set["moe-router-fp32"] {
		t.MoERouterFP32 = *s.routerFP32
	}
	if set["moe-grouped-gemm"] {
		t.MoEGroupedGEMM = *s.groupedGEMM
	}
	if set["cuda-graphs"] {
		t.CUDAGraphs = *s.cudaGraphs
	}
	if set["cp-nccl-max-ctas"] {
		t.CPMaxCTAs = *s.cpMaxCTAs
	}
	if set["dp-nccl-max-ctas"] {
		t.DPMaxCTAs = *s.dpMaxCTAs
	}
	if set["tp-nccl-max-ctas"] {
		t.TPMaxCTAs = *s.tpMaxCTAs
	}
	if set["cuda-device-max-connections"] {
		t.DeviceMaxConnections = *s.queues
	}
	if set["dp-bucket-params"] {
		if err := wholeParams(*s.dpBucket); err != nil {
			return err
		}
		t.DPBucketParams = *s.dpBucket
	}
	return nil
}
