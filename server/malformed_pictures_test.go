package server

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// calContent is nccl-tests output (all_reduce_perf's header and table, rows of
// estimator/calibrate/testdata/p4d-efa/awsefaeks-867b482-nccl2.9.9.txt), its
// layout given by the input's nodes and gpus_per_node.
const calContent = `# nThread 1 nGpus 1 minBytes 8 maxBytes 4294967296 step: 2(factor) warmup iters: 5 iters: 100 validation: 1
#
#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144   float     sum    485.3    2.16    4.05  5e-07    486.3    2.16    4.04  5e-07
    67108864      16777216   float     sum   5305.9   12.65   23.71  5e-07   5301.1   12.66   23.74  5e-07
  1073741824     268435456   float     sum    47392   22.66   42.48  5e-07    47420   22.64   42.46  5e-07
`

// calInputs is a calibration's inputs, one file of calContent with these fields.
func calInputs(fields map[string]any) raw {
	in := map[string]any{"name": "a.txt", "content": calContent, "nodes": 2, "gpus_per_node": 8, "op": "allreduce"}
	for k, v := range fields {
		if v == del {
			delete(in, k)
		} else {
			in[k] = v
		}
	}
	b, err := json.Marshal([]any{in})
	if err != nil {
		panic(err)
	}
	return raw(b)
}

// okCal is a calibration body: one nccl-tests output of 2 nodes of 8.
var okCal = with(`{"cluster": {"name": "aws-p4d"}}`, "inputs", calInputs(nil))

// surface is one REST path of a method and its gRPC call, the REST body being
// the request (SimulateCollective) or its one field (the pictures: body
// "estimate", "plan", "calibration" in stepcost_http.yaml).
type surface struct {
	path string
	// grpc decodes the REST body as the gRPC client would send it and calls the
	// method; err is the decoding's.
	grpc func(context.Context, *grpc.ClientConn, string) (decodeErr, err error)
}

func viaGRPC[Req proto.Message](newReq func() Req, call func(context.Context, *grpc.ClientConn, Req) error) func(context.Context, *grpc.ClientConn, string) (error, error) {
	return func(ctx context.Context, conn *grpc.ClientConn, body string) (error, error) {
		req := newReq()
		if err := protojson.Unmarshal([]byte(body), req); err != nil {
			return err, nil
		}
		return nil, call(ctx, conn, req)
	}
}

var surfaces = map[string]surface{
	"SimulateCollective": {"/v1/collectives:simulate", viaGRPC(func() *pb.SimulateCollectiveRequest { return new(pb.SimulateCollectiveRequest) },
		func(ctx context.Context, c *grpc.ClientConn, r *pb.SimulateCollectiveRequest) error {
			_, err := pb.NewStepcostServiceClient(c).SimulateCollective(ctx, r)
			return err
		})},
	"DrawSchedule": {"/v1/pictures:schedule", viaGRPC(func() *pb.EstimateStepRequest { return new(pb.EstimateStepRequest) },
		func(ctx context.Context, c *grpc.ClientConn, r *pb.EstimateStepRequest) error {
			_, err := pb.NewPictureServiceClient(c).DrawSchedule(ctx, &pb.DrawScheduleRequest{Estimate: r})
			return err
		})},
	"DrawPareto": {"/v1/pictures:pareto", viaGRPC(func() *pb.EstimatePlanRequest { return new(pb.EstimatePlanRequest) },
		func(ctx context.Context, c *grpc.ClientConn, r *pb.EstimatePlanRequest) error {
			_, err := pb.NewPictureServiceClient(c).DrawPareto(ctx, &pb.DrawParetoRequest{Plan: r})
			return err
		})},
	"DrawCalibration": {"/v1/pictures:calibration", viaGRPC(func() *pb.CalibrateClusterRequest { return new(pb.CalibrateClusterRequest) },
		func(ctx context.Context, c *grpc.ClientConn, r *pb.CalibrateClusterRequest) error {
			_, err := pb.NewPictureServiceClient(c).DrawCalibration(ctx, &pb.DrawCalibrationRequest{Calibration: r})
			return err
		})},
}

// TestMalformedCollectivesAndPictures sends malformed SimulateCollective and
// picture requests over gRPC and REST: wrong types, unknown fields, negatives,
// absurd sizes, empty groups and groups larger than the cluster. Each is
// INVALID_ARGUMENT (HTTP 400) with a violation naming the field (in the request
// the REST body is: the pictures' REST body is the request's one field), within
// a few seconds: never INTERNAL, never a hang, never an answer from a default.
func TestMalformedCollectivesAndPictures(t *testing.T) {
	d := startDaemon(t, func(c *Config) { c.Limits = malformedLimits; c.MaxRequestBytes = malformedMaxBytes })
	defer d.stop()
	conn := grpcConn(t, d)
	const coll, sched, pareto, cal = "SimulateCollective", "DrawSchedule", "DrawPareto", "DrawCalibration"
	cases := []struct {
		name, method, body, field string
		rest                      bool // only JSON can spell it
	}{
		{"unknown field", coll, with(okColl, "sise_bytes", 1), "sise_bytes", true},
		{"size a word", coll, with(okColl, "size_bytes", "lots"), "size_bytes", true},
		{"size 2^62", coll, with(okColl, "size_bytes", int64(1)<<62), "size_bytes", false},
		{"size past int64", coll, with(okColl, "size_bytes", raw("9223372036854775808")), "size_bytes", true},
		{"0 nodes", coll, with(okColl, "nodes", 0), "nodes", false},
		{"0 nodes of 0 GPUs", coll, with(okColl, "nodes", 0, "gpus_per_node", 0), "nodes", false},
		{"more nodes than the cluster", coll, with(okColl, "cluster", raw(`{"name": "dgx-h100", "nodes": 2}`)), "cluster.nodes", false},
		{"more GPUs a node than it has", coll, with(okColl, "gpus_per_node", 16), "gpus_per_node", false},
		{"nodes a string", coll, with(okColl, "nodes", "four"), "nodes", true},
		{"cluster an array", coll, with(okColl, "cluster", raw(`[]`)), "cluster", true},
		{"step rows negative", coll, with(okColl, "steps", true, "max_step_rows", -1), "max_step_rows", false},
		{"step rows absurd", coll, with(okColl, "steps", true, "max_step_rows", 1<<30), "max_step_rows", false},

		{"unknown layout field", sched, with(pictureStepBody, "layout.tq", 2), "layout.tq", true},
		{"seq_len a word", sched, with(pictureStepBody, "training.seq_len", "long"), "training.seq_len", true},
		{"tp negative", sched, with(pictureStepBody, "layout.tp", -2), "layout.tp", false},
		{"pp negative", sched, with(pictureStepBody, "layout.pp", -1), "layout.pp", false},
		{"global batch 2^62", sched, with(pictureStepBody, "training.global_batch", int64(1)<<62), "training.global_batch", false},
		{"seq_len 0", sched, with(pictureStepBody, "training.seq_len", 0), "training.seq_len", false},
		{"micro batch negative", sched, with(pictureStepBody, "layout.micro_batch", -1), "layout.micro_batch", false},
		{"more GPUs than the cluster", sched, with(pictureStepBody, "cluster", raw(`{"name": "dgx-h100", "nodes": 1}`)), "cluster.nodes", false},
		{"tp past int32", sched, with(pictureStepBody, "layout.tp", int64(1)<<32), "layout.tp", true},
		{"no model", sched, with(pictureStepBody, "model", del), "model", false},
		{"zero stage 7", sched, with(pictureStepBody, "layout.zero", 7), "layout.zero", false},

		{"unknown field", pareto, with(picturePlanBody, "gpu", 16), "gpu", true},
		{"0 GPUs", pareto, with(picturePlanBody, "gpus", 0), "max_gpus", false},
		{"GPUs negative", pareto, with(picturePlanBody, "gpus", -16), "gpus", false},
		{"GPUs past int32", pareto, with(picturePlanBody, "gpus", int64(1)<<62), "gpus", true},
		{"more GPUs than the cluster", pareto, with(picturePlanBody, "cluster", raw(`{"name": "dgx-h100", "nodes": 1}`)), "cluster.nodes", false},
		{"top_k negative", pareto, with(picturePlanBody, "top_k", -1), "top_k", false},
		{"top_k absurd", pareto, with(picturePlanBody, "top_k", 1<<30), "top_k", false},
		{"batch a word", pareto, with(picturePlanBody, "training.global_batch", "many"), "training.global_batch", true},
		{"seq_len negative", pareto, with(picturePlanBody, "training.seq_len", -1), "training.seq_len", false},
		{"model an array", pareto, with(picturePlanBody, "model", raw(`[]`)), "model", true},

		{"no inputs", cal, with(okCal, "inputs", raw(`[]`)), "inputs", false},
		{"inputs a string", cal, with(okCal, "inputs", "a.txt"), "inputs", true},
		{"unknown field", cal, with(okCal, "inputz", raw(`[]`)), "inputz", true},
		{"no cluster", cal, with(okCal, "cluster", del), "cluster", false},
		{"input without content", cal, with(okCal, "inputs", calInputs(map[string]any{"content": del})), "inputs[0].content", false},
		// 0 nodes: the device lines give them, and a file without any is at fault.
		{"input of 0 nodes", cal, with(okCal, "inputs", calInputs(map[string]any{"nodes": 0})), "inputs[0].content", false},
		{"input launch unknown", cal, with(okCal, "inputs", calInputs(map[string]any{"launch": "by-hand"})), "inputs[0].launch", false},
		{"input algorithm unknown", cal, with(okCal, "inputs", calInputs(map[string]any{"algo": "gossip"})), "inputs[0].algo", false},
		{"input nodes negative", cal, with(okCal, "inputs", calInputs(map[string]any{"nodes": -2})), "inputs[0].nodes", false},
		{"input GPUs a node past the node", cal, with(okCal, "inputs", calInputs(map[string]any{"gpus_per_node": 64})), "inputs[0].gpus_per_node", false},
		{"input of more nodes than the cluster", cal, with(okCal, "cluster", raw(`{"name": "aws-p4d", "nodes": 2}`), "inputs", calInputs(map[string]any{"nodes": 64})), "inputs[0].nodes", false},
		{"input op unknown", cal, with(okCal, "inputs", calInputs(map[string]any{"op": "gossip"})), "inputs[0].op", false},
		{"input nodes a word", cal, with(okCal, "inputs", calInputs(map[string]any{"nodes": "two"})), "inputs[0].nodes", true},
	}
	for _, tc := range cases {
		s := surfaces[tc.method]
		check := func(t *testing.T, code codes.Code, msg string, vs [][2]string, took time.Duration) {
			t.Helper()
			if code != codes.InvalidArgument {
				t.Errorf("%v after %v, want INVALID_ARGUMENT: %s", code, took.Round(time.Millisecond), msg)
				return
			}
			if took > 5*time.Second {
				t.Errorf("refused after %v", took.Round(time.Millisecond))
			}
			for _, v := range vs {
				if v[0] == tc.field {
					return
				}
			}
			t.Errorf("no violation of %s in %v (message %q)", tc.field, vs, msg)
		}
		t.Run(tc.method+"/"+tc.name+"/grpc", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			decodeErr, err := s.grpc(ctx, conn, tc.body)
			if (decodeErr != nil) != tc.rest {
				t.Fatalf("the gRPC client's JSON decoding: %v; the case is REST only: %v", decodeErr, tc.rest)
			}
			if tc.rest {
				return
			}
			r := grpcRefusal(err)
			check(t, r.code, r.msg, r.violations, time.Since(start))
		})
		t.Run(tc.method+"/"+tc.name+"/rest", func(t *testing.T) {
			start := time.Now()
			r := postRefusal(t, d, s.path, tc.body, http.StatusBadRequest)
			check(t, r.code, r.msg, r.violations, time.Since(start))
		})
	}
}
