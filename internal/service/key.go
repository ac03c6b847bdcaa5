package service

import (
	"encoding/json"

	"google.golang.org/protobuf/proto"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// requestKey is what a cache key is made of: the request as sent, with the parts
// it was resolved from cleared (rest), and what those parts resolved to
// (resolved). So every field of a request is in its key unless it was resolved —
// a field added to the API is in the key the day it is added — and equivalent
// spellings of what is resolved (a model by name or by its architecture, a
// catalog cluster or its definition, constraint lists in any order, defaults left
// out or spelled out) share one entry. TestCacheKeyCoversEveryField changes every
// field of every request in turn and checks that the key changes.
type requestKey struct {
	rest     proto.Message
	resolved any
}

// parts are the key's bytes: the deterministic encoding of rest, and the JSON
// of resolved (an error for a value JSON cannot spell, NaN: then no cache).
func (k requestKey) parts() (rest, resolved []byte, err error) {
	if rest, err = (proto.MarshalOptions{Deterministic: true}).Marshal(k.rest); err != nil {
		return nil, nil, err
	}
	if resolved, err = json.Marshal(k.resolved); err != nil {
		return nil, nil, err
	}
	return rest, resolved, nil
}

// clearResolvedCluster clears what of a cluster is resolved into its spec: the
// catalog name or definition, and the node count (the spec is sized for the
// job). Free GPUs stay unless the caller resolved them too.
func clearResolvedCluster(c *pb.ClusterSpec) {
	if c == nil {
		return
	}
	c.Source = nil
	c.Nodes = 0
}

// stepRest is an EstimateStep request without what wire.Step.Key holds resolved:
// the model, the training, the layout and the cluster's spec.
func stepRest(req *pb.EstimateStepRequest) proto.Message {
	r := proto.CloneOf(req)
	r.Model, r.Training, r.Layout = nil, nil, nil
	clearResolvedCluster(r.Cluster)
	return r
}

// planRest is an EstimatePlan request without what wire.Plan.Key holds resolved:
// the model, the training, the cluster's spec and free GPUs, the constraints (as
// sets), the objective and the top K (with their defaults), the excluded and the
// degraded nodes (as sets).
func planRest(req *pb.EstimatePlanRequest) proto.Message {
	r := proto.CloneOf(req)
	r.Model, r.Training, r.Constraints = nil, nil, nil
	r.ExcludeNodes, r.DegradedNodes = nil, nil
	r.Objective, r.TopK = 0, 0
	clearResolvedCluster(r.Cluster)
	if r.Cluster != nil {
		r.Cluster.FreeGpus = nil
	}
	return r
}

// collectiveRest is a SimulateCollective request without what
// wire.Collective.Key holds resolved: the cluster's spec, the operation and its
// options, the size, the group's nodes and GPUs per node (with their defaults),
// and the schedule's rows.
func collectiveRest(req *pb.SimulateCollectiveRequest) proto.Message {
	r := proto.CloneOf(req)
	clearResolvedCluster(r.Cluster)
	r.Collective, r.Algorithm, r.Protocol, r.Launch = 0, 0, 0, 0
	r.SizeBytes, r.Nodes, r.GpusPerNode, r.MaxStepRows = 0, 0, 0, 0
	r.Concurrent, r.Steps = false, false
	return r
}
