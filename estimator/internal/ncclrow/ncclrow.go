// Package ncclrow is stepcost's nccl-measurement schema: one row of a collective
// measurement table, the form its published collective measurements are kept in
// (estimator/collective/accuracy/testdata/nccl_*.jsonl, read by
// estimator/collective/accuracy) and the form calibrate.ParseMeasurementRows reads
// a user's measurements in (calibrate.MeasurementRow). One type serves both, so a
// field of the data cannot be named one way for the comparison and another for
// calibration.
package ncclrow

// Row is one message size of one run, with the numbers as the benchmark printed
// them and where they came from. Sizes follow nccl-tests (the total buffer for
// all-gather and reduce-scatter), times are µs per call, bandwidths GB/s (10⁹ B/s);
// busbw = algbw × nccl-tests' bus factor. A null field is one the source does not
// state.
type Row struct {
	ID          string   `json:"id"`
	SourceID    string   `json:"source_id"`
	System      string   `json:"system"`
	Vendor      string   `json:"vendor"`
	GPU         string   `json:"gpu"`
	GPUsPerNode *int     `json:"gpus_per_node"`
	Nodes       *int     `json:"n_nodes"`
	NGPUs       *int     `json:"n_gpus"`
	IntraFabric *string  `json:"intra_fabric"`
	InterFabric *string  `json:"inter_fabric"`
	NICsPerNode *int     `json:"nics_per_node"`
	NICGbps     *float64 `json:"nic_gbps"`
	Collective  string   `json:"collective"`
	// Algorithm and Protocol are what the run forced (NCCL_ALGO, NCCL_PROTO): an
	// algorithm or protocol name, optionally followed by a remark in parentheses
	// ("Ring (NCCL_ALGO=Ring)"); null when NCCL chose.
	Algorithm      *string  `json:"algorithm"`
	Protocol       *string  `json:"protocol"`
	Library        string   `json:"library"`
	LibraryVersion *string  `json:"library_version"`
	Benchmark      string   `json:"benchmark"`
	DType          string   `json:"dtype"`
	RedOp          *string  `json:"redop"`
	SizeBytes      *float64 `json:"size_bytes"`
	SizeLabel      *string  `json:"size_label"`
	// Placement says which of nccl-tests' columns time_us is: "out-of-place"
	// (the default) or "in-place".
	Placement     string   `json:"placement"`
	TimeUs        *float64 `json:"time_us"`
	AlgBW         *float64 `json:"algbw_GBps"`
	BusBW         *float64 `json:"busbw_GBps"`
	InPlaceTimeUs *float64 `json:"inplace_time_us"`
	InPlaceAlgBW  *float64 `json:"inplace_algbw_GBps"`
	InPlaceBusBW  *float64 `json:"inplace_busbw_GBps"`
	Kind          string   `json:"kind"`
	Derived       []string `json:"derived"`
	QualityFlags  []string `json:"quality_flags"`
	SourceURL     *string  `json:"source_url"`
	SourcePath    *string  `json:"source_path"`
	SourceCommit  *string  `json:"source_commit"`
	Notes         *string  `json:"notes"`
}
