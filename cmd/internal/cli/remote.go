package cli

import (
	"context"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/topology"
	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Sub-commands run against a daemon with --server: the request built from the flags
// goes over gRPC and the answer is printed from the response.

func clusterProto(name string, spec topology.Spec) *pb.ClusterSpec {
	if name != "" {
		return &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: name}}
	}
	return &pb.ClusterSpec{Source: &pb.ClusterSpec_Definition{Definition: wire.SpecToDefinition(spec)}, Nodes: int32(spec.Nodes)}
}

func modelProto(a model.Arch, catalogName string, params float64) *pb.ModelSpec {
	switch {
	case catalogName != "":
		return &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: catalogName}}
	case params != 0:
		return &pb.ModelSpec{Source: &pb.ModelSpec_Params{Params: params}}
	}
	return &pb.ModelSpec{Source: &pb.ModelSpec_Architecture{Architecture: wire.ArchToProto(a)}}
}

func printProtoJSON(w io.Writer, m proto.Message) error {
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  ", UseProtoNames: true}.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

func remoteEstimate(ctx context.Context, addr string, sec *remoteSecurity, req *pb.EstimateStepRequest, asJSON bool, w io.Writer) error {
	svc, done, err := connect(addr, sec)
	if err != nil {
		return err
	}
	defer done()
	resp, err := svc.EstimateStep(ctx, req)
	if err != nil {
		return err
	}
	if asJSON {
		return printProtoJSON(w, resp)
	}
	e := resp.GetEstimate()
	fmt.Fprintf(w, "%s on %d GPUs (server %s, %s%s)\n\n", resp.GetModel().GetName(), e.GetGpus(), addr, resp.GetEstimatorVersion(), cachedNote(resp.GetCached()))
	fmt.Fprintf(w, "step time  %s   tokens/s per GPU %.0f   MFU %.1f%%\n\n", fmtSeconds(e.GetStepTimeS()), e.GetThroughput().GetTokensPerSPerGpu(), 100*e.GetThroughput().GetMfu())
	b := e.GetBreakdown()
	t := table{head: []string{"where the time goes", "time"}}
	for _, x := range []struct {
		n string
		v float64
	}{{"forward", b.GetForwardS()}, {"backward", b.GetBackwardS()}, {"recompute", b.GetRecomputeS()}, {"pipeline bubble", b.GetBubbleS()},
		{"optimizer step", b.GetOptimizerS()}, {"comm/compute contention", b.GetContentionS()}} {
		if x.v > 0 {
			t.add(x.n, fmtSeconds(x.v))
		}
	}
	x := b.GetExposedCommS()
	for _, c := range []struct {
		kind string
		v    float64
	}{{"tp", x.GetTp()}, {"cp", x.GetCp()}, {"ep", x.GetEp()}, {"pp", x.GetPp()}, {"dp", x.GetDp()},
		{"zero3", x.GetZero3()}, {"embedding", x.GetEmbedding()}} {
		if c.v > 0 {
			t.add("exposed "+c.kind+" comm", fmtSeconds(c.v))
		}
	}
	t.add("total", fmtSeconds(b.GetTotalS()))
	t.write(w)
	m := e.GetMemory()
	fmt.Fprintf(w, "\nmemory per GPU: %.1f of %.1f GB (fits: %v)\n", m.GetTotalGb(), m.GetCapacityGb(), m.GetFits())
	return nil
}

func remotePlan(ctx context.Context, addr string, sec *remoteSecurity, req *pb.EstimatePlanRequest, asJSON bool, w io.Writer) error {
	svc, done, err := connect(addr, sec)
	if err != nil {
		return err
	}
	defer done()
	resp, err := svc.EstimatePlan(ctx, req)
	if err != nil {
		return err
	}
	if asJSON {
		if err := printProtoJSON(w, resp); err != nil {
			return err
		}
		if len(resp.GetPlans()) == 0 {
			return errNoPlan
		}
		return nil
	}
	st := resp.GetStats()
	fmt.Fprintf(w, "%s (server %s, %s%s): %d layouts, %d estimated, %.1f ms\n\n", resp.GetModel().GetName(), addr,
		resp.GetEstimatorVersion(), cachedNote(resp.GetCached()), st.GetEnumerated(), st.GetEvaluated(), st.GetElapsedMs())
	t := table{head: []string{"#", "gpus", "layout", "step", "MFU", "memory GB"}}
	for _, p := range resp.GetPlans() {
		l := p.GetLayout()
		t.add(fmt.Sprint(p.GetRank()), fmt.Sprint(p.GetGpus()),
			fmt.Sprintf("tp%d pp%d dp%d cp%d z%d mbs%d v%d", l.GetTp(), l.GetPp(), l.GetDp(), l.GetCp(), l.GetZero(), l.GetMicroBatch(), l.GetVirtualStages()),
			fmtSeconds(p.GetEstimate().GetStepTimeS()), fmt.Sprintf("%.1f%%", 100*p.GetEstimate().GetThroughput().GetMfu()),
			fmt.Sprintf("%.1f", p.GetEstimate().GetMemory().GetTotalGb()))
	}
	if len(resp.GetPlans()) == 0 {
		return errNoPlan
	}
	t.write(w)
	return nil
}

// remoteCollective asks a daemon; perNode is the group's GPUs per node, to say
// which GPU a rank of the schedule is.
func remoteCollective(ctx context.Context, addr string, sec *remoteSecurity, req *pb.SimulateCollectiveRequest, perNode int, asJSON bool, w io.Writer) error {
	svc, done, err := connect(addr, sec)
	if err != nil {
		return err
	}
	defer done()
	resp, err := svc.SimulateCollective(ctx, req)
	if err != nil {
		return err
	}
	sched := scheduleFromProto(resp.GetSchedule())
	if asJSON {
		if err := printProtoJSON(w, resp); err != nil {
			return err
		}
		return sched.failed()
	}
	c := resp.GetChosen()
	fmt.Fprintf(w, "%d ranks (server %s%s)\nchosen: %s/%s  time %s  algbw %.1f GB/s  busbw %.1f GB/s\n", resp.GetRanks(), addr, cachedNote(resp.GetCached()),
		c.GetAlgorithm(), c.GetProtocol(), fmtUs(c.GetTimeUs()), c.GetAlgbwGbps(), c.GetBusbwGbps())
	if sched != nil {
		fmt.Fprintln(w)
		sched.write(w, perNode)
		return sched.failed()
	}
	return nil
}

func cachedNote(c bool) string {
	if c {
		return ", cached"
	}
	return ""
}
