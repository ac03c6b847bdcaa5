from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

ALGORITHM_DIRECT: Algorithm
ALGORITHM_DOUBLE_TREE: Algorithm
ALGORITHM_HIERARCHICAL: Algorithm
ALGORITHM_NVLS: Algorithm
ALGORITHM_NVLS_TREE: Algorithm
ALGORITHM_PAIRWISE: Algorithm
ALGORITHM_PAT: Algorithm
ALGORITHM_RING: Algorithm
ALGORITHM_TREE: Algorithm
ALGORITHM_UNSPECIFIED: Algorithm
BACKWARD_PREFETCH_NONE: BackwardPrefetch
BACKWARD_PREFETCH_POST: BackwardPrefetch
BACKWARD_PREFETCH_PRE: BackwardPrefetch
BACKWARD_PREFETCH_UNSPECIFIED: BackwardPrefetch
COLLECTIVE_ALL_GATHER: Collective
COLLECTIVE_ALL_REDUCE: Collective
COLLECTIVE_ALL_TO_ALL: Collective
COLLECTIVE_BROADCAST: Collective
COLLECTIVE_REDUCE: Collective
COLLECTIVE_REDUCE_SCATTER: Collective
COLLECTIVE_SEND_RECV: Collective
COLLECTIVE_UNSPECIFIED: Collective
DESCRIPTOR: _descriptor.FileDescriptor
LAUNCH_EAGER: Launch
LAUNCH_GRAPH: Launch
LAUNCH_PER_PROCESS: Launch
LAUNCH_SINGLE_PROCESS: Launch
LAUNCH_UNSPECIFIED: Launch
OBJECTIVE_COST: Objective
OBJECTIVE_STEP_TIME: Objective
OBJECTIVE_THROUGHPUT: Objective
OBJECTIVE_UNSPECIFIED: Objective
PRECISION_BF16: Precision
PRECISION_FP16: Precision
PRECISION_FP8: Precision
PRECISION_UNSPECIFIED: Precision
PROTOCOL_LL: Protocol
PROTOCOL_LL128: Protocol
PROTOCOL_SIMPLE: Protocol
PROTOCOL_UNSPECIFIED: Protocol
RECOMPUTE_FULL: Recompute
RECOMPUTE_NONE: Recompute
RECOMPUTE_OPS: Recompute
RECOMPUTE_SELECTIVE: Recompute
RECOMPUTE_UNSPECIFIED: Recompute
SCHEDULE_1F1B: Schedule
SCHEDULE_DUALPIPE: Schedule
SCHEDULE_GPIPE: Schedule
SCHEDULE_INTERLEAVED: Schedule
SCHEDULE_UNSPECIFIED: Schedule
SCHEDULE_ZB_V: Schedule
SCHEDULE_ZERO_BUBBLE: Schedule
TRANSFER_KIND_ADD: TransferKind
TRANSFER_KIND_COPY: TransferKind
TRANSFER_KIND_MULTICAST: TransferKind
TRANSFER_KIND_SWITCH_REDUCE: TransferKind
TRANSFER_KIND_UNSPECIFIED: TransferKind

class AlgoRange(_message.Message):
    __slots__ = ["algo", "gpus_per_node", "max_bytes", "max_nodes", "min_bytes", "min_nodes", "nodes", "op"]
    ALGO_FIELD_NUMBER: _ClassVar[int]
    GPUS_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_NODES_FIELD_NUMBER: _ClassVar[int]
    MIN_BYTES_FIELD_NUMBER: _ClassVar[int]
    MIN_NODES_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    algo: str
    gpus_per_node: int
    max_bytes: float
    max_nodes: int
    min_bytes: float
    min_nodes: int
    nodes: int
    op: str
    def __init__(self, op: _Optional[str] = ..., nodes: _Optional[int] = ..., gpus_per_node: _Optional[int] = ..., min_bytes: _Optional[float] = ..., max_bytes: _Optional[float] = ..., algo: _Optional[str] = ..., min_nodes: _Optional[int] = ..., max_nodes: _Optional[int] = ...) -> None: ...

class Architecture(_message.Message):
    __slots__ = ["ffn", "gated_mlp", "global_every", "glu_clamp", "head_dim", "heads", "hidden", "kv_heads", "layers", "mla", "moe", "mtp_layers", "name", "sliding_window", "tied_embeddings", "vocab"]
    FFN_FIELD_NUMBER: _ClassVar[int]
    GATED_MLP_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_EVERY_FIELD_NUMBER: _ClassVar[int]
    GLU_CLAMP_FIELD_NUMBER: _ClassVar[int]
    HEADS_FIELD_NUMBER: _ClassVar[int]
    HEAD_DIM_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_FIELD_NUMBER: _ClassVar[int]
    KV_HEADS_FIELD_NUMBER: _ClassVar[int]
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    MLA_FIELD_NUMBER: _ClassVar[int]
    MOE_FIELD_NUMBER: _ClassVar[int]
    MTP_LAYERS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SLIDING_WINDOW_FIELD_NUMBER: _ClassVar[int]
    TIED_EMBEDDINGS_FIELD_NUMBER: _ClassVar[int]
    VOCAB_FIELD_NUMBER: _ClassVar[int]
    ffn: int
    gated_mlp: bool
    global_every: int
    glu_clamp: bool
    head_dim: int
    heads: int
    hidden: int
    kv_heads: int
    layers: int
    mla: MLA
    moe: MoE
    mtp_layers: int
    name: str
    sliding_window: int
    tied_embeddings: bool
    vocab: int
    def __init__(self, name: _Optional[str] = ..., layers: _Optional[int] = ..., hidden: _Optional[int] = ..., heads: _Optional[int] = ..., kv_heads: _Optional[int] = ..., ffn: _Optional[int] = ..., gated_mlp: bool = ..., vocab: _Optional[int] = ..., tied_embeddings: bool = ..., moe: _Optional[_Union[MoE, _Mapping]] = ..., head_dim: _Optional[int] = ..., mla: _Optional[_Union[MLA, _Mapping]] = ..., sliding_window: _Optional[int] = ..., global_every: _Optional[int] = ..., mtp_layers: _Optional[int] = ..., glu_clamp: bool = ...) -> None: ...

class Breakdown(_message.Message):
    __slots__ = ["backward_s", "bubble_s", "contention_s", "exposed_comm_s", "forward_s", "hidden_comm_s", "optimizer_s", "recompute_s", "total_s"]
    BACKWARD_S_FIELD_NUMBER: _ClassVar[int]
    BUBBLE_S_FIELD_NUMBER: _ClassVar[int]
    CONTENTION_S_FIELD_NUMBER: _ClassVar[int]
    EXPOSED_COMM_S_FIELD_NUMBER: _ClassVar[int]
    FORWARD_S_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_COMM_S_FIELD_NUMBER: _ClassVar[int]
    OPTIMIZER_S_FIELD_NUMBER: _ClassVar[int]
    RECOMPUTE_S_FIELD_NUMBER: _ClassVar[int]
    TOTAL_S_FIELD_NUMBER: _ClassVar[int]
    backward_s: float
    bubble_s: float
    contention_s: float
    exposed_comm_s: CommTimes
    forward_s: float
    hidden_comm_s: CommTimes
    optimizer_s: float
    recompute_s: float
    total_s: float
    def __init__(self, forward_s: _Optional[float] = ..., backward_s: _Optional[float] = ..., recompute_s: _Optional[float] = ..., bubble_s: _Optional[float] = ..., optimizer_s: _Optional[float] = ..., contention_s: _Optional[float] = ..., exposed_comm_s: _Optional[_Union[CommTimes, _Mapping]] = ..., hidden_comm_s: _Optional[_Union[CommTimes, _Mapping]] = ..., total_s: _Optional[float] = ...) -> None: ...

class CalibrateClusterRequest(_message.Message):
    __slots__ = ["cluster", "inputs", "name"]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    cluster: ClusterSpec
    inputs: _containers.RepeatedCompositeFieldContainer[CalibrationInput]
    name: str
    def __init__(self, cluster: _Optional[_Union[ClusterSpec, _Mapping]] = ..., inputs: _Optional[_Iterable[_Union[CalibrationInput, _Mapping]]] = ..., name: _Optional[str] = ...) -> None: ...

class CalibrateClusterResponse(_message.Message):
    __slots__ = ["after", "at_bound", "base", "before", "choices", "cluster", "compromise", "compute_scale", "constants", "contradictions", "declined", "errors", "excluded", "files", "mismatch_rows", "mismatches", "moved", "notes", "out_of_sample", "undetermined", "warnings"]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    AT_BOUND_FIELD_NUMBER: _ClassVar[int]
    BASE_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    CHOICES_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    COMPROMISE_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_SCALE_FIELD_NUMBER: _ClassVar[int]
    CONSTANTS_FIELD_NUMBER: _ClassVar[int]
    CONTRADICTIONS_FIELD_NUMBER: _ClassVar[int]
    DECLINED_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    EXCLUDED_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    MISMATCHES_FIELD_NUMBER: _ClassVar[int]
    MISMATCH_ROWS_FIELD_NUMBER: _ClassVar[int]
    MOVED_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    OUT_OF_SAMPLE_FIELD_NUMBER: _ClassVar[int]
    UNDETERMINED_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    after: _containers.RepeatedCompositeFieldContainer[CalibrationMeasurement]
    at_bound: _containers.RepeatedScalarFieldContainer[str]
    base: str
    before: _containers.RepeatedCompositeFieldContainer[CalibrationMeasurement]
    choices: _containers.RepeatedCompositeFieldContainer[AlgoRange]
    cluster: ClusterDefinition
    compromise: bool
    compute_scale: float
    constants: _containers.RepeatedCompositeFieldContainer[CalibratedConstant]
    contradictions: _containers.RepeatedScalarFieldContainer[str]
    declined: _containers.RepeatedScalarFieldContainer[str]
    errors: _containers.RepeatedCompositeFieldContainer[CalibrationErrorRow]
    excluded: _containers.RepeatedScalarFieldContainer[str]
    files: _containers.RepeatedCompositeFieldContainer[CalibrationFile]
    mismatch_rows: _containers.RepeatedCompositeFieldContainer[CalibrationMismatch]
    mismatches: _containers.RepeatedScalarFieldContainer[str]
    moved: _containers.RepeatedScalarFieldContainer[str]
    notes: _containers.RepeatedScalarFieldContainer[str]
    out_of_sample: _containers.RepeatedCompositeFieldContainer[CalibrationMeasurement]
    undetermined: _containers.RepeatedScalarFieldContainer[str]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, cluster: _Optional[_Union[ClusterDefinition, _Mapping]] = ..., constants: _Optional[_Iterable[_Union[CalibratedConstant, _Mapping]]] = ..., errors: _Optional[_Iterable[_Union[CalibrationErrorRow, _Mapping]]] = ..., moved: _Optional[_Iterable[str]] = ..., at_bound: _Optional[_Iterable[str]] = ..., declined: _Optional[_Iterable[str]] = ..., contradictions: _Optional[_Iterable[str]] = ..., excluded: _Optional[_Iterable[str]] = ..., compromise: bool = ..., mismatches: _Optional[_Iterable[str]] = ..., notes: _Optional[_Iterable[str]] = ..., base: _Optional[str] = ..., files: _Optional[_Iterable[_Union[CalibrationFile, _Mapping]]] = ..., undetermined: _Optional[_Iterable[str]] = ..., compute_scale: _Optional[float] = ..., before: _Optional[_Iterable[_Union[CalibrationMeasurement, _Mapping]]] = ..., out_of_sample: _Optional[_Iterable[_Union[CalibrationMeasurement, _Mapping]]] = ..., after: _Optional[_Iterable[_Union[CalibrationMeasurement, _Mapping]]] = ..., choices: _Optional[_Iterable[_Union[AlgoRange, _Mapping]]] = ..., mismatch_rows: _Optional[_Iterable[_Union[CalibrationMismatch, _Mapping]]] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class CalibratedConstant(_message.Message):
    __slots__ = ["base", "field", "fitted", "max", "min", "name"]
    BASE_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    FITTED_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    base: float
    field: str
    fitted: float
    max: float
    min: float
    name: str
    def __init__(self, name: _Optional[str] = ..., field: _Optional[str] = ..., base: _Optional[float] = ..., fitted: _Optional[float] = ..., min: _Optional[float] = ..., max: _Optional[float] = ...) -> None: ...

class CalibrationErrorRow(_message.Message):
    __slots__ = ["after_mean", "after_median", "before_mean", "before_median", "group", "label", "rows"]
    AFTER_MEAN_FIELD_NUMBER: _ClassVar[int]
    AFTER_MEDIAN_FIELD_NUMBER: _ClassVar[int]
    BEFORE_MEAN_FIELD_NUMBER: _ClassVar[int]
    BEFORE_MEDIAN_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    after_mean: float
    after_median: float
    before_mean: float
    before_median: float
    group: str
    label: str
    rows: int
    def __init__(self, group: _Optional[str] = ..., label: _Optional[str] = ..., rows: _Optional[int] = ..., before_median: _Optional[float] = ..., after_median: _Optional[float] = ..., before_mean: _Optional[float] = ..., after_mean: _Optional[float] = ...) -> None: ...

class CalibrationFile(_message.Message):
    __slots__ = ["algo", "description", "device", "file", "framework", "gpus", "gpus_per_node", "kind", "launch", "logged_steps", "model", "nodes", "nodes_from", "op", "rows", "step_seconds"]
    ALGO_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    GPUS_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LAUNCH_FIELD_NUMBER: _ClassVar[int]
    LOGGED_STEPS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    NODES_FROM_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    STEP_SECONDS_FIELD_NUMBER: _ClassVar[int]
    algo: str
    description: str
    device: str
    file: str
    framework: str
    gpus: int
    gpus_per_node: int
    kind: str
    launch: str
    logged_steps: int
    model: str
    nodes: int
    nodes_from: str
    op: str
    rows: int
    step_seconds: float
    def __init__(self, file: _Optional[str] = ..., kind: _Optional[str] = ..., op: _Optional[str] = ..., nodes: _Optional[int] = ..., gpus_per_node: _Optional[int] = ..., device: _Optional[str] = ..., launch: _Optional[str] = ..., algo: _Optional[str] = ..., rows: _Optional[int] = ..., nodes_from: _Optional[str] = ..., description: _Optional[str] = ..., framework: _Optional[str] = ..., model: _Optional[str] = ..., gpus: _Optional[int] = ..., step_seconds: _Optional[float] = ..., logged_steps: _Optional[int] = ...) -> None: ...

class CalibrationInput(_message.Message):
    __slots__ = ["algo", "content", "gpus_per_node", "launch", "name", "nodes", "op", "run"]
    ALGO_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    GPUS_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    LAUNCH_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    algo: str
    content: str
    gpus_per_node: int
    launch: str
    name: str
    nodes: int
    op: str
    run: CalibrationRun
    def __init__(self, name: _Optional[str] = ..., content: _Optional[str] = ..., nodes: _Optional[int] = ..., gpus_per_node: _Optional[int] = ..., op: _Optional[str] = ..., launch: _Optional[str] = ..., algo: _Optional[str] = ..., run: _Optional[_Union[CalibrationRun, _Mapping]] = ...) -> None: ...

class CalibrationMeasurement(_message.Message):
    __slots__ = ["algo", "bytes", "file", "line", "measured_us", "nodes", "op", "predicted_us", "ranks"]
    ALGO_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    MEASURED_US_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    PREDICTED_US_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    algo: str
    bytes: float
    file: str
    line: int
    measured_us: float
    nodes: int
    op: str
    predicted_us: float
    ranks: int
    def __init__(self, file: _Optional[str] = ..., line: _Optional[int] = ..., op: _Optional[str] = ..., bytes: _Optional[float] = ..., nodes: _Optional[int] = ..., ranks: _Optional[int] = ..., algo: _Optional[str] = ..., measured_us: _Optional[float] = ..., predicted_us: _Optional[float] = ...) -> None: ...

class CalibrationMismatch(_message.Message):
    __slots__ = ["bytes", "file", "line", "match_err", "measured", "model", "model_err"]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    MATCH_ERR_FIELD_NUMBER: _ClassVar[int]
    MEASURED_FIELD_NUMBER: _ClassVar[int]
    MODEL_ERR_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    bytes: float
    file: str
    line: int
    match_err: float
    measured: str
    model: str
    model_err: float
    def __init__(self, file: _Optional[str] = ..., line: _Optional[int] = ..., bytes: _Optional[float] = ..., model: _Optional[str] = ..., measured: _Optional[str] = ..., model_err: _Optional[float] = ..., match_err: _Optional[float] = ...) -> None: ...

class CalibrationRun(_message.Message):
    __slots__ = ["cp", "dp", "ep", "framework", "global_batch", "gpus", "gpus_per_node", "micro_batch", "model", "pp", "precision", "recompute", "schedule", "seq_len", "sp", "tp", "vpp", "zero"]
    CP_FIELD_NUMBER: _ClassVar[int]
    DP_FIELD_NUMBER: _ClassVar[int]
    EP_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_BATCH_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    GPUS_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    MICRO_BATCH_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PP_FIELD_NUMBER: _ClassVar[int]
    PRECISION_FIELD_NUMBER: _ClassVar[int]
    RECOMPUTE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    SEQ_LEN_FIELD_NUMBER: _ClassVar[int]
    SP_FIELD_NUMBER: _ClassVar[int]
    TP_FIELD_NUMBER: _ClassVar[int]
    VPP_FIELD_NUMBER: _ClassVar[int]
    ZERO_FIELD_NUMBER: _ClassVar[int]
    cp: int
    dp: int
    ep: int
    framework: str
    global_batch: int
    gpus: int
    gpus_per_node: int
    micro_batch: int
    model: str
    pp: int
    precision: str
    recompute: str
    schedule: str
    seq_len: int
    sp: bool
    tp: int
    vpp: int
    zero: int
    def __init__(self, model: _Optional[str] = ..., gpus: _Optional[int] = ..., gpus_per_node: _Optional[int] = ..., tp: _Optional[int] = ..., pp: _Optional[int] = ..., cp: _Optional[int] = ..., ep: _Optional[int] = ..., dp: _Optional[int] = ..., zero: _Optional[int] = ..., micro_batch: _Optional[int] = ..., global_batch: _Optional[int] = ..., seq_len: _Optional[int] = ..., precision: _Optional[str] = ..., recompute: _Optional[str] = ..., sp: bool = ..., schedule: _Optional[str] = ..., vpp: _Optional[int] = ..., framework: _Optional[str] = ...) -> None: ...

class ClusterDefinition(_message.Message):
    __slots__ = ["algorithms", "base", "description", "gpu", "gpu_name", "gpus_per_node", "host", "intra", "name", "nccl", "network", "nics"]
    ALGORITHMS_FIELD_NUMBER: _ClassVar[int]
    BASE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    GPUS_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    GPU_NAME_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    INTRA_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NCCL_FIELD_NUMBER: _ClassVar[int]
    NETWORK_FIELD_NUMBER: _ClassVar[int]
    NICS_FIELD_NUMBER: _ClassVar[int]
    algorithms: _containers.RepeatedCompositeFieldContainer[AlgoRange]
    base: str
    description: str
    gpu: GPU
    gpu_name: str
    gpus_per_node: int
    host: Host
    intra: IntraNode
    name: str
    nccl: str
    network: Network
    nics: NICs
    def __init__(self, name: _Optional[str] = ..., base: _Optional[str] = ..., gpu: _Optional[_Union[GPU, _Mapping]] = ..., gpu_name: _Optional[str] = ..., gpus_per_node: _Optional[int] = ..., intra: _Optional[_Union[IntraNode, _Mapping]] = ..., nics: _Optional[_Union[NICs, _Mapping]] = ..., network: _Optional[_Union[Network, _Mapping]] = ..., description: _Optional[str] = ..., host: _Optional[_Union[Host, _Mapping]] = ..., algorithms: _Optional[_Iterable[_Union[AlgoRange, _Mapping]]] = ..., nccl: _Optional[str] = ...) -> None: ...

class ClusterSpec(_message.Message):
    __slots__ = ["definition", "free_gpus", "name", "nodes"]
    DEFINITION_FIELD_NUMBER: _ClassVar[int]
    FREE_GPUS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    definition: ClusterDefinition
    free_gpus: _containers.RepeatedCompositeFieldContainer[NodeFreeGPUs]
    name: str
    nodes: int
    def __init__(self, name: _Optional[str] = ..., definition: _Optional[_Union[ClusterDefinition, _Mapping]] = ..., nodes: _Optional[int] = ..., free_gpus: _Optional[_Iterable[_Union[NodeFreeGPUs, _Mapping]]] = ...) -> None: ...

class CollectiveEstimate(_message.Message):
    __slots__ = ["algbw_gbps", "algorithm", "auto_candidate", "busbw_gbps", "channels", "chunks", "latency_us", "protocol", "steps", "time_us"]
    ALGBW_GBPS_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    AUTO_CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    BUSBW_GBPS_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    LATENCY_US_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    TIME_US_FIELD_NUMBER: _ClassVar[int]
    algbw_gbps: float
    algorithm: Algorithm
    auto_candidate: bool
    busbw_gbps: float
    channels: int
    chunks: int
    latency_us: float
    protocol: Protocol
    steps: int
    time_us: float
    def __init__(self, algorithm: _Optional[_Union[Algorithm, str]] = ..., protocol: _Optional[_Union[Protocol, str]] = ..., time_us: _Optional[float] = ..., latency_us: _Optional[float] = ..., algbw_gbps: _Optional[float] = ..., busbw_gbps: _Optional[float] = ..., steps: _Optional[int] = ..., channels: _Optional[int] = ..., chunks: _Optional[int] = ..., auto_candidate: bool = ...) -> None: ...

class CollectiveSchedule(_message.Message):
    __slots__ = ["algorithm", "analytical_time_us", "channels", "chunks", "difference", "difference_pct", "latency_us", "omitted_rows", "protocol", "rows", "steps", "time_us", "transfers", "verification"]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    ANALYTICAL_TIME_US_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    DIFFERENCE_FIELD_NUMBER: _ClassVar[int]
    DIFFERENCE_PCT_FIELD_NUMBER: _ClassVar[int]
    LATENCY_US_FIELD_NUMBER: _ClassVar[int]
    OMITTED_ROWS_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    TIME_US_FIELD_NUMBER: _ClassVar[int]
    TRANSFERS_FIELD_NUMBER: _ClassVar[int]
    VERIFICATION_FIELD_NUMBER: _ClassVar[int]
    algorithm: Algorithm
    analytical_time_us: float
    channels: int
    chunks: int
    difference: str
    difference_pct: float
    latency_us: float
    omitted_rows: int
    protocol: Protocol
    rows: _containers.RepeatedCompositeFieldContainer[ScheduleRow]
    steps: int
    time_us: float
    transfers: int
    verification: ScheduleVerification
    def __init__(self, algorithm: _Optional[_Union[Algorithm, str]] = ..., protocol: _Optional[_Union[Protocol, str]] = ..., channels: _Optional[int] = ..., chunks: _Optional[int] = ..., steps: _Optional[int] = ..., transfers: _Optional[int] = ..., time_us: _Optional[float] = ..., latency_us: _Optional[float] = ..., analytical_time_us: _Optional[float] = ..., difference_pct: _Optional[float] = ..., difference: _Optional[str] = ..., verification: _Optional[_Union[ScheduleVerification, _Mapping]] = ..., rows: _Optional[_Iterable[_Union[ScheduleRow, _Mapping]]] = ..., omitted_rows: _Optional[int] = ...) -> None: ...

class CommCall(_message.Message):
    __slots__ = ["algorithm", "bytes", "calls_per_step", "collective", "concurrent_groups", "group_nodes", "group_size", "kind", "protocol", "time_us", "when"]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    CALLS_PER_STEP_FIELD_NUMBER: _ClassVar[int]
    COLLECTIVE_FIELD_NUMBER: _ClassVar[int]
    CONCURRENT_GROUPS_FIELD_NUMBER: _ClassVar[int]
    GROUP_NODES_FIELD_NUMBER: _ClassVar[int]
    GROUP_SIZE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    TIME_US_FIELD_NUMBER: _ClassVar[int]
    WHEN_FIELD_NUMBER: _ClassVar[int]
    algorithm: str
    bytes: float
    calls_per_step: float
    collective: str
    concurrent_groups: int
    group_nodes: int
    group_size: int
    kind: str
    protocol: str
    time_us: float
    when: str
    def __init__(self, kind: _Optional[str] = ..., collective: _Optional[str] = ..., group_size: _Optional[int] = ..., group_nodes: _Optional[int] = ..., concurrent_groups: _Optional[int] = ..., bytes: _Optional[float] = ..., algorithm: _Optional[str] = ..., protocol: _Optional[str] = ..., time_us: _Optional[float] = ..., calls_per_step: _Optional[float] = ..., when: _Optional[str] = ...) -> None: ...

class CommTimes(_message.Message):
    __slots__ = ["cp", "dp", "embedding", "ep", "pp", "tp", "zero3"]
    CP_FIELD_NUMBER: _ClassVar[int]
    DP_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_FIELD_NUMBER: _ClassVar[int]
    EP_FIELD_NUMBER: _ClassVar[int]
    PP_FIELD_NUMBER: _ClassVar[int]
    TP_FIELD_NUMBER: _ClassVar[int]
    ZERO3_FIELD_NUMBER: _ClassVar[int]
    cp: float
    dp: float
    embedding: float
    ep: float
    pp: float
    tp: float
    zero3: float
    def __init__(self, tp: _Optional[float] = ..., cp: _Optional[float] = ..., ep: _Optional[float] = ..., pp: _Optional[float] = ..., dp: _Optional[float] = ..., zero3: _Optional[float] = ..., embedding: _Optional[float] = ...) -> None: ...

class Constraints(_message.Message):
    __slots__ = ["cp", "cp_all_to_all", "ep", "even_split", "experts_whole", "fp8_params", "max_micro_batch", "micro_batch", "min_headroom_gb", "offload", "offload_activations", "overlap_ep", "overlap_tp", "pp", "recompute", "schedules", "sp", "tp", "tp_across_nodes", "uneven_pp", "virtual_stages", "zero"]
    CP_ALL_TO_ALL_FIELD_NUMBER: _ClassVar[int]
    CP_FIELD_NUMBER: _ClassVar[int]
    EP_FIELD_NUMBER: _ClassVar[int]
    EVEN_SPLIT_FIELD_NUMBER: _ClassVar[int]
    EXPERTS_WHOLE_FIELD_NUMBER: _ClassVar[int]
    FP8_PARAMS_FIELD_NUMBER: _ClassVar[int]
    MAX_MICRO_BATCH_FIELD_NUMBER: _ClassVar[int]
    MICRO_BATCH_FIELD_NUMBER: _ClassVar[int]
    MIN_HEADROOM_GB_FIELD_NUMBER: _ClassVar[int]
    OFFLOAD_ACTIVATIONS_FIELD_NUMBER: _ClassVar[int]
    OFFLOAD_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_EP_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_TP_FIELD_NUMBER: _ClassVar[int]
    PP_FIELD_NUMBER: _ClassVar[int]
    RECOMPUTE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULES_FIELD_NUMBER: _ClassVar[int]
    SP_FIELD_NUMBER: _ClassVar[int]
    TP_ACROSS_NODES_FIELD_NUMBER: _ClassVar[int]
    TP_FIELD_NUMBER: _ClassVar[int]
    UNEVEN_PP_FIELD_NUMBER: _ClassVar[int]
    VIRTUAL_STAGES_FIELD_NUMBER: _ClassVar[int]
    ZERO_FIELD_NUMBER: _ClassVar[int]
    cp: _containers.RepeatedScalarFieldContainer[int]
    cp_all_to_all: _containers.RepeatedScalarFieldContainer[bool]
    ep: _containers.RepeatedScalarFieldContainer[int]
    even_split: bool
    experts_whole: _containers.RepeatedScalarFieldContainer[bool]
    fp8_params: _containers.RepeatedScalarFieldContainer[bool]
    max_micro_batch: int
    micro_batch: _containers.RepeatedScalarFieldContainer[int]
    min_headroom_gb: float
    offload: str
    offload_activations: _containers.RepeatedScalarFieldContainer[bool]
    overlap_ep: _containers.RepeatedScalarFieldContainer[bool]
    overlap_tp: _containers.RepeatedScalarFieldContainer[bool]
    pp: _containers.RepeatedScalarFieldContainer[int]
    recompute: _containers.RepeatedScalarFieldContainer[Recompute]
    schedules: _containers.RepeatedScalarFieldContainer[Schedule]
    sp: _containers.RepeatedScalarFieldContainer[bool]
    tp: _containers.RepeatedScalarFieldContainer[int]
    tp_across_nodes: bool
    uneven_pp: bool
    virtual_stages: _containers.RepeatedScalarFieldContainer[int]
    zero: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, tp: _Optional[_Iterable[int]] = ..., pp: _Optional[_Iterable[int]] = ..., cp: _Optional[_Iterable[int]] = ..., ep: _Optional[_Iterable[int]] = ..., zero: _Optional[_Iterable[int]] = ..., micro_batch: _Optional[_Iterable[int]] = ..., virtual_stages: _Optional[_Iterable[int]] = ..., recompute: _Optional[_Iterable[_Union[Recompute, str]]] = ..., sp: _Optional[_Iterable[bool]] = ..., schedules: _Optional[_Iterable[_Union[Schedule, str]]] = ..., tp_across_nodes: bool = ..., uneven_pp: bool = ..., min_headroom_gb: _Optional[float] = ..., max_micro_batch: _Optional[int] = ..., offload: _Optional[str] = ..., overlap_tp: _Optional[_Iterable[bool]] = ..., overlap_ep: _Optional[_Iterable[bool]] = ..., cp_all_to_all: _Optional[_Iterable[bool]] = ..., fp8_params: _Optional[_Iterable[bool]] = ..., offload_activations: _Optional[_Iterable[bool]] = ..., experts_whole: _Optional[_Iterable[bool]] = ..., even_split: bool = ...) -> None: ...

class DegradedNode(_message.Message):
    __slots__ = ["gpu_speed", "link_speed", "nic_speed", "node"]
    GPU_SPEED_FIELD_NUMBER: _ClassVar[int]
    LINK_SPEED_FIELD_NUMBER: _ClassVar[int]
    NIC_SPEED_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    gpu_speed: float
    link_speed: float
    nic_speed: float
    node: int
    def __init__(self, node: _Optional[int] = ..., gpu_speed: _Optional[float] = ..., nic_speed: _Optional[float] = ..., link_speed: _Optional[float] = ...) -> None: ...

class EstimatePlanRequest(_message.Message):
    __slots__ = ["cluster", "constraints", "degraded_link_speed", "degraded_nic_speed", "degraded_nodes", "exclude_nodes", "gpus", "include_dominated", "max_gpus", "min_gpus", "model", "objective", "placement_tolerance", "price_per_gpu_hour", "slow_gpu_speed", "token_budget", "top_k", "training"]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_LINK_SPEED_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_NIC_SPEED_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_NODES_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_NODES_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_DOMINATED_FIELD_NUMBER: _ClassVar[int]
    MAX_GPUS_FIELD_NUMBER: _ClassVar[int]
    MIN_GPUS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_TOLERANCE_FIELD_NUMBER: _ClassVar[int]
    PRICE_PER_GPU_HOUR_FIELD_NUMBER: _ClassVar[int]
    SLOW_GPU_SPEED_FIELD_NUMBER: _ClassVar[int]
    TOKEN_BUDGET_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    TRAINING_FIELD_NUMBER: _ClassVar[int]
    cluster: ClusterSpec
    constraints: Constraints
    degraded_link_speed: float
    degraded_nic_speed: float
    degraded_nodes: _containers.RepeatedCompositeFieldContainer[DegradedNode]
    exclude_nodes: _containers.RepeatedScalarFieldContainer[int]
    gpus: int
    include_dominated: bool
    max_gpus: int
    min_gpus: int
    model: ModelSpec
    objective: Objective
    placement_tolerance: float
    price_per_gpu_hour: float
    slow_gpu_speed: float
    token_budget: float
    top_k: int
    training: Training
    def __init__(self, model: _Optional[_Union[ModelSpec, _Mapping]] = ..., cluster: _Optional[_Union[ClusterSpec, _Mapping]] = ..., training: _Optional[_Union[Training, _Mapping]] = ..., gpus: _Optional[int] = ..., min_gpus: _Optional[int] = ..., max_gpus: _Optional[int] = ..., constraints: _Optional[_Union[Constraints, _Mapping]] = ..., objective: _Optional[_Union[Objective, str]] = ..., price_per_gpu_hour: _Optional[float] = ..., token_budget: _Optional[float] = ..., top_k: _Optional[int] = ..., include_dominated: bool = ..., slow_gpu_speed: _Optional[float] = ..., degraded_nic_speed: _Optional[float] = ..., degraded_link_speed: _Optional[float] = ..., exclude_nodes: _Optional[_Iterable[int]] = ..., placement_tolerance: _Optional[float] = ..., degraded_nodes: _Optional[_Iterable[_Union[DegradedNode, _Mapping]]] = ...) -> None: ...

class EstimatePlanResponse(_message.Message):
    __slots__ = ["cached", "estimator_version", "model", "no_plan_reason", "pareto", "plans", "stats"]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    ESTIMATOR_VERSION_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    NO_PLAN_REASON_FIELD_NUMBER: _ClassVar[int]
    PARETO_FIELD_NUMBER: _ClassVar[int]
    PLANS_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    cached: bool
    estimator_version: str
    model: Architecture
    no_plan_reason: str
    pareto: _containers.RepeatedCompositeFieldContainer[Plan]
    plans: _containers.RepeatedCompositeFieldContainer[Plan]
    stats: SearchStats
    def __init__(self, plans: _Optional[_Iterable[_Union[Plan, _Mapping]]] = ..., pareto: _Optional[_Iterable[_Union[Plan, _Mapping]]] = ..., stats: _Optional[_Union[SearchStats, _Mapping]] = ..., model: _Optional[_Union[Architecture, _Mapping]] = ..., estimator_version: _Optional[str] = ..., cached: bool = ..., no_plan_reason: _Optional[str] = ...) -> None: ...

class EstimateStepRequest(_message.Message):
    __slots__ = ["cluster", "degraded_link_speed", "degraded_nic_speed", "layout", "model", "slow_gpu_speed", "training"]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_LINK_SPEED_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_NIC_SPEED_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    SLOW_GPU_SPEED_FIELD_NUMBER: _ClassVar[int]
    TRAINING_FIELD_NUMBER: _ClassVar[int]
    cluster: ClusterSpec
    degraded_link_speed: float
    degraded_nic_speed: float
    layout: Layout
    model: ModelSpec
    slow_gpu_speed: float
    training: Training
    def __init__(self, model: _Optional[_Union[ModelSpec, _Mapping]] = ..., cluster: _Optional[_Union[ClusterSpec, _Mapping]] = ..., training: _Optional[_Union[Training, _Mapping]] = ..., layout: _Optional[_Union[Layout, _Mapping]] = ..., slow_gpu_speed: _Optional[float] = ..., degraded_nic_speed: _Optional[float] = ..., degraded_link_speed: _Optional[float] = ...) -> None: ...

class EstimateStepResponse(_message.Message):
    __slots__ = ["cached", "estimate", "estimator_version", "model", "nccl_release"]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    ESTIMATOR_VERSION_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    NCCL_RELEASE_FIELD_NUMBER: _ClassVar[int]
    cached: bool
    estimate: StepEstimate
    estimator_version: str
    model: Architecture
    nccl_release: str
    def __init__(self, estimate: _Optional[_Union[StepEstimate, _Mapping]] = ..., model: _Optional[_Union[Architecture, _Mapping]] = ..., estimator_version: _Optional[str] = ..., cached: bool = ..., nccl_release: _Optional[str] = ...) -> None: ...

class FieldViolation(_message.Message):
    __slots__ = ["description", "field"]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    description: str
    field: str
    def __init__(self, field: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class GPU(_message.Message):
    __slots__ = ["arch", "memory_bandwidth_gbps", "memory_gb", "name", "nvlink_gbps", "peak_tflops", "sms", "source"]
    class PeakTflopsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    ARCH_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BANDWIDTH_GBPS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_GB_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NVLINK_GBPS_FIELD_NUMBER: _ClassVar[int]
    PEAK_TFLOPS_FIELD_NUMBER: _ClassVar[int]
    SMS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    arch: str
    memory_bandwidth_gbps: float
    memory_gb: float
    name: str
    nvlink_gbps: float
    peak_tflops: _containers.ScalarMap[str, float]
    sms: int
    source: str
    def __init__(self, name: _Optional[str] = ..., arch: _Optional[str] = ..., peak_tflops: _Optional[_Mapping[str, float]] = ..., memory_gb: _Optional[float] = ..., memory_bandwidth_gbps: _Optional[float] = ..., nvlink_gbps: _Optional[float] = ..., sms: _Optional[int] = ..., source: _Optional[str] = ...) -> None: ...

class Host(_message.Message):
    __slots__ = ["cpu", "gpus_per_link", "link_gbps", "memory_bandwidth_gbps", "memory_gb"]
    CPU_FIELD_NUMBER: _ClassVar[int]
    GPUS_PER_LINK_FIELD_NUMBER: _ClassVar[int]
    LINK_GBPS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BANDWIDTH_GBPS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_GB_FIELD_NUMBER: _ClassVar[int]
    cpu: str
    gpus_per_link: int
    link_gbps: float
    memory_bandwidth_gbps: float
    memory_gb: float
    def __init__(self, memory_gb: _Optional[float] = ..., memory_bandwidth_gbps: _Optional[float] = ..., link_gbps: _Optional[float] = ..., gpus_per_link: _Optional[int] = ..., cpu: _Optional[str] = ...) -> None: ...

class IntraNode(_message.Message):
    __slots__ = ["domain_nodes", "efficiency", "gpu_bandwidth_gbps", "kind", "latency_us", "nvls"]
    DOMAIN_NODES_FIELD_NUMBER: _ClassVar[int]
    EFFICIENCY_FIELD_NUMBER: _ClassVar[int]
    GPU_BANDWIDTH_GBPS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LATENCY_US_FIELD_NUMBER: _ClassVar[int]
    NVLS_FIELD_NUMBER: _ClassVar[int]
    domain_nodes: int
    efficiency: float
    gpu_bandwidth_gbps: float
    kind: str
    latency_us: float
    nvls: bool
    def __init__(self, kind: _Optional[str] = ..., gpu_bandwidth_gbps: _Optional[float] = ..., nvls: bool = ..., domain_nodes: _Optional[int] = ..., efficiency: _Optional[float] = ..., latency_us: _Optional[float] = ...) -> None: ...

class ItemError(_message.Message):
    __slots__ = ["code", "message", "violations"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    violations: _containers.RepeatedCompositeFieldContainer[FieldViolation]
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., violations: _Optional[_Iterable[_Union[FieldViolation, _Mapping]]] = ...) -> None: ...

class Layout(_message.Message):
    __slots__ = ["account_for_embedding", "account_for_loss", "cp", "cp_all_to_all", "dp", "ep", "etp", "fp8_params", "layer_split", "micro_batch", "offload", "offload_activations", "overlap_ep", "overlap_shared_expert", "overlap_tp", "pp", "rank_order", "recompute", "recompute_layers", "recompute_modules", "schedule", "sp", "tp", "virtual_stages", "zero"]
    ACCOUNT_FOR_EMBEDDING_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FOR_LOSS_FIELD_NUMBER: _ClassVar[int]
    CP_ALL_TO_ALL_FIELD_NUMBER: _ClassVar[int]
    CP_FIELD_NUMBER: _ClassVar[int]
    DP_FIELD_NUMBER: _ClassVar[int]
    EP_FIELD_NUMBER: _ClassVar[int]
    ETP_FIELD_NUMBER: _ClassVar[int]
    FP8_PARAMS_FIELD_NUMBER: _ClassVar[int]
    LAYER_SPLIT_FIELD_NUMBER: _ClassVar[int]
    MICRO_BATCH_FIELD_NUMBER: _ClassVar[int]
    OFFLOAD_ACTIVATIONS_FIELD_NUMBER: _ClassVar[int]
    OFFLOAD_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_EP_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_SHARED_EXPERT_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_TP_FIELD_NUMBER: _ClassVar[int]
    PP_FIELD_NUMBER: _ClassVar[int]
    RANK_ORDER_FIELD_NUMBER: _ClassVar[int]
    RECOMPUTE_FIELD_NUMBER: _ClassVar[int]
    RECOMPUTE_LAYERS_FIELD_NUMBER: _ClassVar[int]
    RECOMPUTE_MODULES_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    SP_FIELD_NUMBER: _ClassVar[int]
    TP_FIELD_NUMBER: _ClassVar[int]
    VIRTUAL_STAGES_FIELD_NUMBER: _ClassVar[int]
    ZERO_FIELD_NUMBER: _ClassVar[int]
    account_for_embedding: bool
    account_for_loss: bool
    cp: int
    cp_all_to_all: bool
    dp: int
    ep: int
    etp: int
    fp8_params: bool
    layer_split: _containers.RepeatedScalarFieldContainer[int]
    micro_batch: int
    offload: str
    offload_activations: bool
    overlap_ep: bool
    overlap_shared_expert: bool
    overlap_tp: bool
    pp: int
    rank_order: str
    recompute: Recompute
    recompute_layers: int
    recompute_modules: _containers.RepeatedScalarFieldContainer[str]
    schedule: Schedule
    sp: bool
    tp: int
    virtual_stages: int
    zero: int
    def __init__(self, tp: _Optional[int] = ..., pp: _Optional[int] = ..., dp: _Optional[int] = ..., cp: _Optional[int] = ..., ep: _Optional[int] = ..., zero: _Optional[int] = ..., micro_batch: _Optional[int] = ..., recompute: _Optional[_Union[Recompute, str]] = ..., sp: bool = ..., schedule: _Optional[_Union[Schedule, str]] = ..., virtual_stages: _Optional[int] = ..., layer_split: _Optional[_Iterable[int]] = ..., rank_order: _Optional[str] = ..., overlap_tp: bool = ..., cp_all_to_all: bool = ..., recompute_layers: _Optional[int] = ..., account_for_embedding: bool = ..., account_for_loss: bool = ..., overlap_ep: bool = ..., offload: _Optional[str] = ..., etp: _Optional[int] = ..., recompute_modules: _Optional[_Iterable[str]] = ..., overlap_shared_expert: bool = ..., fp8_params: bool = ..., offload_activations: bool = ...) -> None: ...

class ListCatalogRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListCatalogResponse(_message.Message):
    __slots__ = ["gpus", "models", "systems"]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    SYSTEMS_FIELD_NUMBER: _ClassVar[int]
    gpus: _containers.RepeatedCompositeFieldContainer[GPU]
    models: _containers.RepeatedCompositeFieldContainer[Architecture]
    systems: _containers.RepeatedCompositeFieldContainer[SystemEntry]
    def __init__(self, gpus: _Optional[_Iterable[_Union[GPU, _Mapping]]] = ..., systems: _Optional[_Iterable[_Union[SystemEntry, _Mapping]]] = ..., models: _Optional[_Iterable[_Union[Architecture, _Mapping]]] = ...) -> None: ...

class MLA(_message.Message):
    __slots__ = ["kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"]
    KV_LORA_RANK_FIELD_NUMBER: _ClassVar[int]
    QK_NOPE_HEAD_DIM_FIELD_NUMBER: _ClassVar[int]
    QK_ROPE_HEAD_DIM_FIELD_NUMBER: _ClassVar[int]
    Q_LORA_RANK_FIELD_NUMBER: _ClassVar[int]
    V_HEAD_DIM_FIELD_NUMBER: _ClassVar[int]
    kv_lora_rank: int
    q_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    def __init__(self, q_lora_rank: _Optional[int] = ..., kv_lora_rank: _Optional[int] = ..., qk_nope_head_dim: _Optional[int] = ..., qk_rope_head_dim: _Optional[int] = ..., v_head_dim: _Optional[int] = ...) -> None: ...

class Memory(_message.Message):
    __slots__ = ["activations_gb", "capacity_gb", "comm_buffers_gb", "embeddings_logits_gb", "fits", "fp8_weight_copies_gb", "gathered_weights_gb", "gradients_gb", "headroom_gb", "host_capacity_gb", "host_gb", "in_flight_micro_batches", "optimizer_gb", "runtime_reserve_gb", "stage", "total_gb", "weights_gb"]
    ACTIVATIONS_GB_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_GB_FIELD_NUMBER: _ClassVar[int]
    COMM_BUFFERS_GB_FIELD_NUMBER: _ClassVar[int]
    EMBEDDINGS_LOGITS_GB_FIELD_NUMBER: _ClassVar[int]
    FITS_FIELD_NUMBER: _ClassVar[int]
    FP8_WEIGHT_COPIES_GB_FIELD_NUMBER: _ClassVar[int]
    GATHERED_WEIGHTS_GB_FIELD_NUMBER: _ClassVar[int]
    GRADIENTS_GB_FIELD_NUMBER: _ClassVar[int]
    HEADROOM_GB_FIELD_NUMBER: _ClassVar[int]
    HOST_CAPACITY_GB_FIELD_NUMBER: _ClassVar[int]
    HOST_GB_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_MICRO_BATCHES_FIELD_NUMBER: _ClassVar[int]
    OPTIMIZER_GB_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_RESERVE_GB_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_GB_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_GB_FIELD_NUMBER: _ClassVar[int]
    activations_gb: float
    capacity_gb: float
    comm_buffers_gb: float
    embeddings_logits_gb: float
    fits: bool
    fp8_weight_copies_gb: float
    gathered_weights_gb: float
    gradients_gb: float
    headroom_gb: float
    host_capacity_gb: float
    host_gb: float
    in_flight_micro_batches: float
    optimizer_gb: float
    runtime_reserve_gb: float
    stage: int
    total_gb: float
    weights_gb: float
    def __init__(self, weights_gb: _Optional[float] = ..., gradients_gb: _Optional[float] = ..., optimizer_gb: _Optional[float] = ..., gathered_weights_gb: _Optional[float] = ..., activations_gb: _Optional[float] = ..., embeddings_logits_gb: _Optional[float] = ..., comm_buffers_gb: _Optional[float] = ..., runtime_reserve_gb: _Optional[float] = ..., total_gb: _Optional[float] = ..., capacity_gb: _Optional[float] = ..., headroom_gb: _Optional[float] = ..., fits: bool = ..., stage: _Optional[int] = ..., in_flight_micro_batches: _Optional[float] = ..., fp8_weight_copies_gb: _Optional[float] = ..., host_gb: _Optional[float] = ..., host_capacity_gb: _Optional[float] = ...) -> None: ...

class MoE(_message.Message):
    __slots__ = ["bias", "expert_ffn", "experts", "first_dense", "frequency", "groups", "shared_experts", "top_k", "topk_groups"]
    BIAS_FIELD_NUMBER: _ClassVar[int]
    EXPERTS_FIELD_NUMBER: _ClassVar[int]
    EXPERT_FFN_FIELD_NUMBER: _ClassVar[int]
    FIRST_DENSE_FIELD_NUMBER: _ClassVar[int]
    FREQUENCY_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    SHARED_EXPERTS_FIELD_NUMBER: _ClassVar[int]
    TOPK_GROUPS_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    bias: bool
    expert_ffn: int
    experts: int
    first_dense: int
    frequency: int
    groups: int
    shared_experts: int
    top_k: int
    topk_groups: int
    def __init__(self, experts: _Optional[int] = ..., top_k: _Optional[int] = ..., expert_ffn: _Optional[int] = ..., frequency: _Optional[int] = ..., shared_experts: _Optional[int] = ..., first_dense: _Optional[int] = ..., groups: _Optional[int] = ..., topk_groups: _Optional[int] = ..., bias: bool = ...) -> None: ...

class ModelSpec(_message.Message):
    __slots__ = ["architecture", "name", "params"]
    ARCHITECTURE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    architecture: Architecture
    name: str
    params: float
    def __init__(self, name: _Optional[str] = ..., architecture: _Optional[_Union[Architecture, _Mapping]] = ..., params: _Optional[float] = ...) -> None: ...

class NICs(_message.Message):
    __slots__ = ["efficiency", "gbps", "gpu_nic", "kind", "latency_us", "per_node", "simple_protocol_only"]
    EFFICIENCY_FIELD_NUMBER: _ClassVar[int]
    GBPS_FIELD_NUMBER: _ClassVar[int]
    GPU_NIC_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LATENCY_US_FIELD_NUMBER: _ClassVar[int]
    PER_NODE_FIELD_NUMBER: _ClassVar[int]
    SIMPLE_PROTOCOL_ONLY_FIELD_NUMBER: _ClassVar[int]
    efficiency: float
    gbps: float
    gpu_nic: _containers.RepeatedScalarFieldContainer[int]
    kind: str
    latency_us: float
    per_node: int
    simple_protocol_only: bool
    def __init__(self, per_node: _Optional[int] = ..., gbps: _Optional[float] = ..., kind: _Optional[str] = ..., gpu_nic: _Optional[_Iterable[int]] = ..., efficiency: _Optional[float] = ..., latency_us: _Optional[float] = ..., simple_protocol_only: bool = ...) -> None: ...

class Network(_message.Message):
    __slots__ = ["nodes_per_leaf", "oversubscription", "rail_optimized", "spine_latency_us"]
    NODES_PER_LEAF_FIELD_NUMBER: _ClassVar[int]
    OVERSUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    RAIL_OPTIMIZED_FIELD_NUMBER: _ClassVar[int]
    SPINE_LATENCY_US_FIELD_NUMBER: _ClassVar[int]
    nodes_per_leaf: int
    oversubscription: float
    rail_optimized: bool
    spine_latency_us: float
    def __init__(self, rail_optimized: bool = ..., nodes_per_leaf: _Optional[int] = ..., oversubscription: _Optional[float] = ..., spine_latency_us: _Optional[float] = ...) -> None: ...

class NodeFreeGPUs(_message.Message):
    __slots__ = ["gpus", "node"]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    gpus: _containers.RepeatedScalarFieldContainer[int]
    node: int
    def __init__(self, node: _Optional[int] = ..., gpus: _Optional[_Iterable[int]] = ...) -> None: ...

class NodeUse(_message.Message):
    __slots__ = ["gpus", "node"]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    gpus: _containers.RepeatedScalarFieldContainer[int]
    node: int
    def __init__(self, node: _Optional[int] = ..., gpus: _Optional[_Iterable[int]] = ...) -> None: ...

class NotApplicable(_message.Message):
    __slots__ = ["algorithm", "reason"]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    algorithm: Algorithm
    reason: str
    def __init__(self, algorithm: _Optional[_Union[Algorithm, str]] = ..., reason: _Optional[str] = ...) -> None: ...

class Optimizer(_message.Message):
    __slots__ = ["grad_bytes", "name", "state_bytes", "weight_bytes"]
    GRAD_BYTES_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_BYTES_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_BYTES_FIELD_NUMBER: _ClassVar[int]
    grad_bytes: float
    name: str
    state_bytes: float
    weight_bytes: float
    def __init__(self, name: _Optional[str] = ..., weight_bytes: _Optional[float] = ..., grad_bytes: _Optional[float] = ..., state_bytes: _Optional[float] = ...) -> None: ...

class Placement(_message.Message):
    __slots__ = ["degraded_nodes_avoided", "degraded_nodes_used", "free_whole_nodes_left", "leaves", "nodes", "partial_nodes", "whole_nodes"]
    DEGRADED_NODES_AVOIDED_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_NODES_USED_FIELD_NUMBER: _ClassVar[int]
    FREE_WHOLE_NODES_LEFT_FIELD_NUMBER: _ClassVar[int]
    LEAVES_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_NODES_FIELD_NUMBER: _ClassVar[int]
    WHOLE_NODES_FIELD_NUMBER: _ClassVar[int]
    degraded_nodes_avoided: _containers.RepeatedScalarFieldContainer[int]
    degraded_nodes_used: _containers.RepeatedScalarFieldContainer[int]
    free_whole_nodes_left: int
    leaves: int
    nodes: _containers.RepeatedCompositeFieldContainer[NodeUse]
    partial_nodes: int
    whole_nodes: int
    def __init__(self, nodes: _Optional[_Iterable[_Union[NodeUse, _Mapping]]] = ..., whole_nodes: _Optional[int] = ..., partial_nodes: _Optional[int] = ..., free_whole_nodes_left: _Optional[int] = ..., leaves: _Optional[int] = ..., degraded_nodes_used: _Optional[_Iterable[int]] = ..., degraded_nodes_avoided: _Optional[_Iterable[int]] = ...) -> None: ...

class Plan(_message.Message):
    __slots__ = ["cost_usd", "dominated", "estimate", "gpus", "layout", "placement", "rank", "score"]
    COST_USD_FIELD_NUMBER: _ClassVar[int]
    DOMINATED_FIELD_NUMBER: _ClassVar[int]
    ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    cost_usd: float
    dominated: bool
    estimate: StepEstimate
    gpus: int
    layout: Layout
    placement: Placement
    rank: int
    score: float
    def __init__(self, rank: _Optional[int] = ..., gpus: _Optional[int] = ..., layout: _Optional[_Union[Layout, _Mapping]] = ..., placement: _Optional[_Union[Placement, _Mapping]] = ..., estimate: _Optional[_Union[StepEstimate, _Mapping]] = ..., score: _Optional[float] = ..., cost_usd: _Optional[float] = ..., dominated: bool = ...) -> None: ...

class RankConfigsRequest(_message.Message):
    __slots__ = ["configs", "objective", "price_per_gpu_hour", "token_budget"]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    PRICE_PER_GPU_HOUR_FIELD_NUMBER: _ClassVar[int]
    TOKEN_BUDGET_FIELD_NUMBER: _ClassVar[int]
    configs: _containers.RepeatedCompositeFieldContainer[EstimateStepRequest]
    objective: Objective
    price_per_gpu_hour: float
    token_budget: float
    def __init__(self, configs: _Optional[_Iterable[_Union[EstimateStepRequest, _Mapping]]] = ..., objective: _Optional[_Union[Objective, str]] = ..., price_per_gpu_hour: _Optional[float] = ..., token_budget: _Optional[float] = ...) -> None: ...

class RankConfigsResponse(_message.Message):
    __slots__ = ["estimator_version", "results"]
    ESTIMATOR_VERSION_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    estimator_version: str
    results: _containers.RepeatedCompositeFieldContainer[RankedConfig]
    def __init__(self, results: _Optional[_Iterable[_Union[RankedConfig, _Mapping]]] = ..., estimator_version: _Optional[str] = ...) -> None: ...

class RankPair(_message.Message):
    __slots__ = ["dst", "src"]
    DST_FIELD_NUMBER: _ClassVar[int]
    SRC_FIELD_NUMBER: _ClassVar[int]
    dst: int
    src: int
    def __init__(self, src: _Optional[int] = ..., dst: _Optional[int] = ...) -> None: ...

class RankedConfig(_message.Message):
    __slots__ = ["dominated", "error", "estimate", "index", "infeasible", "rank", "score"]
    DOMINATED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    INFEASIBLE_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    dominated: bool
    error: ItemError
    estimate: StepEstimate
    index: int
    infeasible: bool
    rank: int
    score: float
    def __init__(self, index: _Optional[int] = ..., rank: _Optional[int] = ..., score: _Optional[float] = ..., estimate: _Optional[_Union[StepEstimate, _Mapping]] = ..., error: _Optional[_Union[ItemError, _Mapping]] = ..., infeasible: bool = ..., dominated: bool = ...) -> None: ...

class ScheduleFlow(_message.Message):
    __slots__ = ["bytes", "examples", "kind", "max_bytes", "min_bytes", "pairs", "route"]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    EXAMPLES_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    MIN_BYTES_FIELD_NUMBER: _ClassVar[int]
    PAIRS_FIELD_NUMBER: _ClassVar[int]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    bytes: int
    examples: _containers.RepeatedCompositeFieldContainer[RankPair]
    kind: TransferKind
    max_bytes: int
    min_bytes: int
    pairs: int
    route: str
    def __init__(self, kind: _Optional[_Union[TransferKind, str]] = ..., route: _Optional[str] = ..., pairs: _Optional[int] = ..., min_bytes: _Optional[int] = ..., max_bytes: _Optional[int] = ..., bytes: _Optional[int] = ..., examples: _Optional[_Iterable[_Union[RankPair, _Mapping]]] = ...) -> None: ...

class ScheduleRow(_message.Message):
    __slots__ = ["bottleneck", "bottleneck_bytes", "bottleneck_gbps", "first_step", "flows", "latency_us", "max_step_time_us", "phase", "step_count", "time_us"]
    BOTTLENECK_BYTES_FIELD_NUMBER: _ClassVar[int]
    BOTTLENECK_FIELD_NUMBER: _ClassVar[int]
    BOTTLENECK_GBPS_FIELD_NUMBER: _ClassVar[int]
    FIRST_STEP_FIELD_NUMBER: _ClassVar[int]
    FLOWS_FIELD_NUMBER: _ClassVar[int]
    LATENCY_US_FIELD_NUMBER: _ClassVar[int]
    MAX_STEP_TIME_US_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    STEP_COUNT_FIELD_NUMBER: _ClassVar[int]
    TIME_US_FIELD_NUMBER: _ClassVar[int]
    bottleneck: str
    bottleneck_bytes: float
    bottleneck_gbps: float
    first_step: int
    flows: _containers.RepeatedCompositeFieldContainer[ScheduleFlow]
    latency_us: float
    max_step_time_us: float
    phase: str
    step_count: int
    time_us: float
    def __init__(self, first_step: _Optional[int] = ..., step_count: _Optional[int] = ..., phase: _Optional[str] = ..., time_us: _Optional[float] = ..., latency_us: _Optional[float] = ..., max_step_time_us: _Optional[float] = ..., bottleneck: _Optional[str] = ..., bottleneck_bytes: _Optional[float] = ..., bottleneck_gbps: _Optional[float] = ..., flows: _Optional[_Iterable[_Union[ScheduleFlow, _Mapping]]] = ...) -> None: ...

class ScheduleVerification(_message.Message):
    __slots__ = ["elements", "error", "result", "scaled", "verified"]
    ELEMENTS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    SCALED_FIELD_NUMBER: _ClassVar[int]
    VERIFIED_FIELD_NUMBER: _ClassVar[int]
    elements: int
    error: str
    result: str
    scaled: bool
    verified: bool
    def __init__(self, verified: bool = ..., result: _Optional[str] = ..., error: _Optional[str] = ..., elements: _Optional[int] = ..., scaled: bool = ...) -> None: ...

class SearchStats(_message.Message):
    __slots__ = ["dominated", "elapsed_ms", "enumerated", "evaluated", "feasible", "gpu_counts", "pruned"]
    class PrunedEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    DOMINATED_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_MS_FIELD_NUMBER: _ClassVar[int]
    ENUMERATED_FIELD_NUMBER: _ClassVar[int]
    EVALUATED_FIELD_NUMBER: _ClassVar[int]
    FEASIBLE_FIELD_NUMBER: _ClassVar[int]
    GPU_COUNTS_FIELD_NUMBER: _ClassVar[int]
    PRUNED_FIELD_NUMBER: _ClassVar[int]
    dominated: int
    elapsed_ms: float
    enumerated: int
    evaluated: int
    feasible: int
    gpu_counts: _containers.RepeatedScalarFieldContainer[int]
    pruned: _containers.ScalarMap[str, int]
    def __init__(self, enumerated: _Optional[int] = ..., pruned: _Optional[_Mapping[str, int]] = ..., evaluated: _Optional[int] = ..., feasible: _Optional[int] = ..., gpu_counts: _Optional[_Iterable[int]] = ..., elapsed_ms: _Optional[float] = ..., dominated: _Optional[int] = ...) -> None: ...

class SimulateCollectiveRequest(_message.Message):
    __slots__ = ["algorithm", "cluster", "collective", "concurrent", "gpus_per_node", "launch", "max_step_rows", "nodes", "protocol", "size_bytes", "steps"]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    COLLECTIVE_FIELD_NUMBER: _ClassVar[int]
    CONCURRENT_FIELD_NUMBER: _ClassVar[int]
    GPUS_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    LAUNCH_FIELD_NUMBER: _ClassVar[int]
    MAX_STEP_ROWS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    algorithm: Algorithm
    cluster: ClusterSpec
    collective: Collective
    concurrent: bool
    gpus_per_node: int
    launch: Launch
    max_step_rows: int
    nodes: int
    protocol: Protocol
    size_bytes: int
    steps: bool
    def __init__(self, cluster: _Optional[_Union[ClusterSpec, _Mapping]] = ..., nodes: _Optional[int] = ..., gpus_per_node: _Optional[int] = ..., concurrent: bool = ..., collective: _Optional[_Union[Collective, str]] = ..., size_bytes: _Optional[int] = ..., algorithm: _Optional[_Union[Algorithm, str]] = ..., protocol: _Optional[_Union[Protocol, str]] = ..., launch: _Optional[_Union[Launch, str]] = ..., steps: bool = ..., max_step_rows: _Optional[int] = ...) -> None: ...

class SimulateCollectiveResponse(_message.Message):
    __slots__ = ["cached", "chosen", "concurrent_groups", "considered", "estimator_version", "nccl_release", "not_applicable", "ranks", "schedule", "warnings"]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    CHOSEN_FIELD_NUMBER: _ClassVar[int]
    CONCURRENT_GROUPS_FIELD_NUMBER: _ClassVar[int]
    CONSIDERED_FIELD_NUMBER: _ClassVar[int]
    ESTIMATOR_VERSION_FIELD_NUMBER: _ClassVar[int]
    NCCL_RELEASE_FIELD_NUMBER: _ClassVar[int]
    NOT_APPLICABLE_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    cached: bool
    chosen: CollectiveEstimate
    concurrent_groups: int
    considered: _containers.RepeatedCompositeFieldContainer[CollectiveEstimate]
    estimator_version: str
    nccl_release: str
    not_applicable: _containers.RepeatedCompositeFieldContainer[NotApplicable]
    ranks: int
    schedule: CollectiveSchedule
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, chosen: _Optional[_Union[CollectiveEstimate, _Mapping]] = ..., considered: _Optional[_Iterable[_Union[CollectiveEstimate, _Mapping]]] = ..., not_applicable: _Optional[_Iterable[_Union[NotApplicable, _Mapping]]] = ..., ranks: _Optional[int] = ..., concurrent_groups: _Optional[int] = ..., estimator_version: _Optional[str] = ..., cached: bool = ..., schedule: _Optional[_Union[CollectiveSchedule, _Mapping]] = ..., warnings: _Optional[_Iterable[str]] = ..., nccl_release: _Optional[str] = ...) -> None: ...

class StepEstimate(_message.Message):
    __slots__ = ["assumptions", "breakdown", "communication", "gpus", "layout", "memory", "micro_batches", "stage_layers", "step_time_s", "throughput", "training", "warnings"]
    ASSUMPTIONS_FIELD_NUMBER: _ClassVar[int]
    BREAKDOWN_FIELD_NUMBER: _ClassVar[int]
    COMMUNICATION_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    MICRO_BATCHES_FIELD_NUMBER: _ClassVar[int]
    STAGE_LAYERS_FIELD_NUMBER: _ClassVar[int]
    STEP_TIME_S_FIELD_NUMBER: _ClassVar[int]
    THROUGHPUT_FIELD_NUMBER: _ClassVar[int]
    TRAINING_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    assumptions: _containers.RepeatedScalarFieldContainer[str]
    breakdown: Breakdown
    communication: _containers.RepeatedCompositeFieldContainer[CommCall]
    gpus: int
    layout: Layout
    memory: Memory
    micro_batches: int
    stage_layers: int
    step_time_s: float
    throughput: Throughput
    training: Training
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, step_time_s: _Optional[float] = ..., breakdown: _Optional[_Union[Breakdown, _Mapping]] = ..., memory: _Optional[_Union[Memory, _Mapping]] = ..., throughput: _Optional[_Union[Throughput, _Mapping]] = ..., gpus: _Optional[int] = ..., micro_batches: _Optional[int] = ..., stage_layers: _Optional[int] = ..., communication: _Optional[_Iterable[_Union[CommCall, _Mapping]]] = ..., warnings: _Optional[_Iterable[str]] = ..., assumptions: _Optional[_Iterable[str]] = ..., layout: _Optional[_Union[Layout, _Mapping]] = ..., training: _Optional[_Union[Training, _Mapping]] = ...) -> None: ...

class SystemEntry(_message.Message):
    __slots__ = ["definition", "description", "name", "source"]
    DEFINITION_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    definition: ClusterDefinition
    description: str
    name: str
    source: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., source: _Optional[str] = ..., definition: _Optional[_Union[ClusterDefinition, _Mapping]] = ...) -> None: ...

class Throughput(_message.Message):
    __slots__ = ["hfu", "mfu", "tokens_per_s", "tokens_per_s_per_gpu"]
    HFU_FIELD_NUMBER: _ClassVar[int]
    MFU_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_S_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_S_PER_GPU_FIELD_NUMBER: _ClassVar[int]
    hfu: float
    mfu: float
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    def __init__(self, tokens_per_s: _Optional[float] = ..., tokens_per_s_per_gpu: _Optional[float] = ..., mfu: _Optional[float] = ..., hfu: _Optional[float] = ...) -> None: ...

class Training(_message.Message):
    __slots__ = ["cp_nccl_max_ctas", "cuda_device_max_connections", "cuda_graphs", "dp_bucket_params", "dp_nccl_max_ctas", "dp_reduce_after_backward", "flash_attention_2", "fp8_activations", "fp8_kv_projections_16bit", "fp8_params", "fp8_recipe", "framework", "global_batch", "global_tokens", "moe_capacity_factor", "moe_dispatcher", "moe_grouped_gemm", "moe_imbalance", "moe_pad_to_capacity", "moe_permute_fusion", "moe_router_fp32", "no_dropout", "optimizer", "param_gather", "precision", "seq_len", "tp_nccl_max_ctas", "unfused_attention", "zero3_backward_prefetch", "zero3_on_demand_gathers"]
    CP_NCCL_MAX_CTAS_FIELD_NUMBER: _ClassVar[int]
    CUDA_DEVICE_MAX_CONNECTIONS_FIELD_NUMBER: _ClassVar[int]
    CUDA_GRAPHS_FIELD_NUMBER: _ClassVar[int]
    DP_BUCKET_PARAMS_FIELD_NUMBER: _ClassVar[int]
    DP_NCCL_MAX_CTAS_FIELD_NUMBER: _ClassVar[int]
    DP_REDUCE_AFTER_BACKWARD_FIELD_NUMBER: _ClassVar[int]
    FLASH_ATTENTION_2_FIELD_NUMBER: _ClassVar[int]
    FP8_ACTIVATIONS_FIELD_NUMBER: _ClassVar[int]
    FP8_KV_PROJECTIONS_16BIT_FIELD_NUMBER: _ClassVar[int]
    FP8_PARAMS_FIELD_NUMBER: _ClassVar[int]
    FP8_RECIPE_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_BATCH_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MOE_CAPACITY_FACTOR_FIELD_NUMBER: _ClassVar[int]
    MOE_DISPATCHER_FIELD_NUMBER: _ClassVar[int]
    MOE_GROUPED_GEMM_FIELD_NUMBER: _ClassVar[int]
    MOE_IMBALANCE_FIELD_NUMBER: _ClassVar[int]
    MOE_PAD_TO_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    MOE_PERMUTE_FUSION_FIELD_NUMBER: _ClassVar[int]
    MOE_ROUTER_FP32_FIELD_NUMBER: _ClassVar[int]
    NO_DROPOUT_FIELD_NUMBER: _ClassVar[int]
    OPTIMIZER_FIELD_NUMBER: _ClassVar[int]
    PARAM_GATHER_FIELD_NUMBER: _ClassVar[int]
    PRECISION_FIELD_NUMBER: _ClassVar[int]
    SEQ_LEN_FIELD_NUMBER: _ClassVar[int]
    TP_NCCL_MAX_CTAS_FIELD_NUMBER: _ClassVar[int]
    UNFUSED_ATTENTION_FIELD_NUMBER: _ClassVar[int]
    ZERO3_BACKWARD_PREFETCH_FIELD_NUMBER: _ClassVar[int]
    ZERO3_ON_DEMAND_GATHERS_FIELD_NUMBER: _ClassVar[int]
    cp_nccl_max_ctas: int
    cuda_device_max_connections: int
    cuda_graphs: bool
    dp_bucket_params: int
    dp_nccl_max_ctas: int
    dp_reduce_after_backward: bool
    flash_attention_2: bool
    fp8_activations: bool
    fp8_kv_projections_16bit: bool
    fp8_params: bool
    fp8_recipe: str
    framework: str
    global_batch: int
    global_tokens: int
    moe_capacity_factor: float
    moe_dispatcher: str
    moe_grouped_gemm: bool
    moe_imbalance: float
    moe_pad_to_capacity: bool
    moe_permute_fusion: bool
    moe_router_fp32: bool
    no_dropout: bool
    optimizer: Optimizer
    param_gather: str
    precision: Precision
    seq_len: int
    tp_nccl_max_ctas: int
    unfused_attention: bool
    zero3_backward_prefetch: BackwardPrefetch
    zero3_on_demand_gathers: bool
    def __init__(self, seq_len: _Optional[int] = ..., global_batch: _Optional[int] = ..., global_tokens: _Optional[int] = ..., precision: _Optional[_Union[Precision, str]] = ..., optimizer: _Optional[_Union[Optimizer, _Mapping]] = ..., unfused_attention: bool = ..., zero3_on_demand_gathers: bool = ..., zero3_backward_prefetch: _Optional[_Union[BackwardPrefetch, str]] = ..., framework: _Optional[str] = ..., fp8_recipe: _Optional[str] = ..., dp_reduce_after_backward: bool = ..., moe_imbalance: _Optional[float] = ..., moe_capacity_factor: _Optional[float] = ..., fp8_params: bool = ..., fp8_activations: bool = ..., no_dropout: bool = ..., moe_pad_to_capacity: bool = ..., moe_dispatcher: _Optional[str] = ..., moe_permute_fusion: bool = ..., cuda_graphs: bool = ..., dp_bucket_params: _Optional[int] = ..., flash_attention_2: bool = ..., param_gather: _Optional[str] = ..., moe_router_fp32: bool = ..., cp_nccl_max_ctas: _Optional[int] = ..., dp_nccl_max_ctas: _Optional[int] = ..., tp_nccl_max_ctas: _Optional[int] = ..., moe_grouped_gemm: bool = ..., cuda_device_max_connections: _Optional[int] = ..., fp8_kv_projections_16bit: bool = ...) -> None: ...

class Precision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Recompute(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class BackwardPrefetch(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Schedule(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Objective(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Collective(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Algorithm(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Protocol(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Launch(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class TransferKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
