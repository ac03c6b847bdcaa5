package cli

import (
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
