package wire

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// enumFields are the enum-valued fields of the API's requests, by JSON path (a
// list's elements as [0]), with their enum types.
func enumFields() map[string]protoreflect.EnumDescriptor {
	out := map[string]protoreflect.EnumDescriptor{}
	var walk func(prefix string, md protoreflect.MessageDescriptor, depth int)
	walk = func(prefix string, md protoreflect.MessageDescriptor, depth int) {
		if depth > 6 {
			return
		}
		fs := md.Fields()
		for i := range fs.Len() {
			f := fs.Get(i)
			path := prefix + string(f.Name())
			if f.IsList() {
				path += "[0]"
			}
			switch f.Kind() {
			case protoreflect.EnumKind:
				out[path] = f.Enum()
			case protoreflect.MessageKind:
				if !f.IsMap() {
					walk(path+".", f.Message(), depth+1)
				}
			}
		}
	}
	for _, m := range []protoreflect.ProtoMessage{&pb.EstimateStepRequest{}, &pb.EstimatePlanRequest{}, &pb.RankConfigsRequest{},
		&pb.SimulateCollectiveRequest{}, &pb.DrawScheduleRequest{}, &pb.DrawParetoRequest{}} {
		walk("", m.ProtoReflect().Descriptor(), 0)
	}
	return out
}

// domainValue is the domain's value of an enum's number, by the maps the requests
// are converted with.
func domainValue(e protoreflect.EnumDescriptor, n protoreflect.EnumNumber) (any, bool) {
	switch e.FullName() {
	case "stepcost.v1.Schedule":
		v, ok := schedules[pb.Schedule(n)]
		return v, ok
	case "stepcost.v1.Recompute":
		v, ok := recomputes[pb.Recompute(n)]
		return v, ok
	case "stepcost.v1.BackwardPrefetch":
		v, ok := prefetches[pb.BackwardPrefetch(n)]
		return v, ok
	case "stepcost.v1.Precision":
		v, err := PrecisionFromProto(pb.Precision(n))
		return v, err == nil
	case "stepcost.v1.Objective":
		v, ok := Objectives[pb.Objective(n)]
		return v, ok
	case "stepcost.v1.Collective":
		v, ok := CollectiveOps[pb.Collective(n)]
		return v, ok
	case "stepcost.v1.Algorithm":
		v, ok := Algorithms[pb.Algorithm(n)]
		return v, ok
	case "stepcost.v1.Protocol":
		v, ok := Protocols[pb.Protocol(n)]
		return v, ok
	case "stepcost.v1.Launch":
		v, ok := Launches[pb.Launch(n)]
		return v, ok
	}
	return nil, false
}

// Every value of every enum-valued field of the API's requests, refused, is named
// as the API names it (APIRule), alone, in a list and among choices, and read back
// as the command line spells it (CommandLineSpelling).
func TestEveryEnumFieldSpelledAsTheAPI(t *testing.T) {
	fields := enumFields()
	if len(fields) < 11 {
		t.Fatalf("found %d enum-valued request fields: %v", len(fields), fields)
	}
	for path, e := range fields {
		vs := e.Values()
		for i := range vs.Len() {
			n, name := vs.Get(i).Number(), string(vs.Get(i).Name())
			if n == 0 {
				continue // unspecified: the default, which no refusal names
			}
			v, ok := domainValue(e, n)
			if !ok {
				t.Errorf("%s: %s has no value in the domain (add its type to domainValue and apiSpelling)", path, name)
				continue
			}
			const format = "asks for %s (got %q); runs %s, not %v"
			fe := invalid.Field(path, format, v, v, framework.Or([]any{v, v}), listOf(v))
			want := fmt.Sprintf(format, name, name, name+" or "+name, "["+name+"]")
			if got := APIRule(fe); got != want {
				t.Errorf("%s = %s: %q, want %q", path, name, got, want)
			}
			if got := CommandLineSpelling(APIRule(fe)); got != fe.Rule {
				t.Errorf("%s = %s: read back %q, want %q", path, name, got, fe.Rule)
			}
			if got := APIRule(fe.Under("configs[3]." + path)); got != want {
				t.Errorf("%s = %s under another name: %q, want %q", path, name, got, want)
			}
		}
	}
}

// listOf is v in a one-element list of its type, as the domain lists them.
func listOf(v any) any {
	switch x := v.(type) {
	case step.Schedule:
		return []step.Schedule{x}
	case step.Recompute:
		return []step.Recompute{x}
	case step.Precision:
		return []step.Precision{x}
	}
	return []any{v} // printed [v] by fmt, spelled by its element
}

// A cluster definition's algorithm ranges name their algorithms as strings, as
// the caller wrote them; a calibration's refusals are not respelled at all (the
// service core does not call APIRule for them).
func TestClusterAlgorithmsKeepTheirSpelling(t *testing.T) {
	fe := invalid.Field("cluster.definition.algorithms[0].algo", "%s cannot run %s", collective.Ring, collective.AllToAll)
	if got := APIRule(fe); got != fe.Rule {
		t.Errorf("%q, want %q", got, fe.Rule)
	}
	fe = invalid.Field("algorithm", "%s cannot run %s", collective.Ring, collective.AllToAll)
	if got, want := APIRule(fe), "ALGORITHM_RING cannot run COLLECTIVE_ALL_TO_ALL"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// A rule that is not written from a format (a struct literal) is as it is.
func TestRuleWithoutFormat(t *testing.T) {
	fe := &invalid.Error{Field: "layout.schedule", Rule: "dualpipe needs pp ≥ 2"}
	if got := APIRule(fe); got != fe.Rule {
		t.Errorf("%q", got)
	}
}

// A no-plan reason quotes the request's schedule and recomputation lists as the
// API names their values; other lists and text are kept.
func TestAPINoPlanReason(t *testing.T) {
	in := "no feasible plan: the constraints leave no layout to search: constraints.tp [1], constraints.schedules [1f1b interleaved] (megatron-core's), constraints.recompute [none full] on 16 GPUs"
	want := "no feasible plan: the constraints leave no layout to search: constraints.tp [1], constraints.schedules [SCHEDULE_1F1B SCHEDULE_INTERLEAVED] (megatron-core's), constraints.recompute [RECOMPUTE_NONE RECOMPUTE_FULL] on 16 GPUs"
	if got := APINoPlanReason(in); got != want {
		t.Errorf("%q\nwant %q", got, want)
	}
	if got := CommandLineSpelling(want); got != in {
		t.Errorf("read back %q", got)
	}
}
