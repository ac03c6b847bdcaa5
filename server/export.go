package server

import (
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
	"github.com/stepcost/stepcost/planner"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Conversions the command-line client needs to build requests from its flags.

// LayoutToProto converts a layout.
func LayoutToProto(l step.Layout) *pb.Layout { return layoutToProto(l) }

// TrainingToProto converts a training setup.
func TrainingToProto(t step.Training) *pb.Training { return trainingToProto(t) }

// ArchToProto converts an architecture.
func ArchToProto(a model.Arch) *pb.Architecture { return archToProto(a) }

// SpecToDefinition converts a cluster description.
func SpecToDefinition(s topology.Spec) *pb.ClusterDefinition { return specToDefinition(s) }

// ConstraintsToProto converts planner constraints to the API's.
func ConstraintsToProto(c planner.Constraints) *pb.Constraints { return constraintsToProto(c) }
