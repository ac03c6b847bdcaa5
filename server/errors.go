package server

import (
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
	"github.com/stepcost/stepcost/server/bounded"
)

// toStatus maps a domain error to a gRPC status: field errors become
// InvalidArgument with a BadRequest listing every violated field, unknown catalog
// names NotFound, limits InvalidArgument, context errors their own codes, and
// anything else Internal.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok && !isDomain(err) {
		return err
	}
	code, vs := wire.Code(err)
	c := codes.Internal
	switch code {
	case "CANCELLED":
		c = codes.Canceled
	case "DEADLINE_EXCEEDED":
		c = codes.DeadlineExceeded
	case "NOT_FOUND":
		c = codes.NotFound
	case "INVALID_ARGUMENT":
		// A request over one of the service's limits is the caller's to change, not
		// to retry: InvalidArgument (HTTP 400), naming the field and the limit. Being
		// busy (admission) stays ResourceExhausted (HTTP 429).
		c = codes.InvalidArgument
	}
	if len(vs) == 0 {
		return status.Error(c, bounded.Text(err.Error(), bounded.MaxMessage))
	}
	// The answer lists the first violations and counts them all: a request can hold
	// 100 000 bad map keys, and their every violation would be megabytes of trailers.
	fv := make([]*errdetails.BadRequest_FieldViolation, len(vs))
	for i, v := range vs {
		fv[i] = &errdetails.BadRequest_FieldViolation{Field: v.GetField(), Description: v.GetDescription()}
	}
	fv = bounded.Violations(fv)
	msg := bounded.Message(fv, len(vs))
	if len(vs) <= bounded.MaxViolations && len(vs) > 0 {
		msg = bounded.Text(err.Error(), bounded.MaxMessage)
	}
	st := status.New(c, msg)
	if d, derr := st.WithDetails(&errdetails.BadRequest{FieldViolations: fv}); derr == nil {
		st = d
	}
	return st.Err()
}

func isDomain(err error) bool { return wire.IsDomain(err) }

// violations collects every field error inside err (joined errors included).
func violations(err error) []*errdetails.BadRequest_FieldViolation {
	var out []*errdetails.BadRequest_FieldViolation
	for _, fe := range wire.FieldErrors(err) {
		out = append(out, &errdetails.BadRequest_FieldViolation{Field: fe.Field, Description: fe.Rule})
	}
	return out
}

// itemError is the error of one RankConfigs item.
func itemError(err error) *pb.ItemError {
	st := status.Convert(toStatus(err))
	out := &pb.ItemError{Code: codeName(st.Code()), Message: st.Message()}
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				out.Violations = append(out.Violations, &pb.FieldViolation{Field: v.GetField(), Description: v.GetDescription()})
			}
		}
	}
	return out
}

func codeName(c codes.Code) string {
	switch c {
	case codes.InvalidArgument:
		return "INVALID_ARGUMENT"
	case codes.NotFound:
		return "NOT_FOUND"
	case codes.ResourceExhausted:
		return "RESOURCE_EXHAUSTED"
	case codes.DeadlineExceeded:
		return "DEADLINE_EXCEEDED"
	case codes.Canceled:
		return "CANCELLED"
	case codes.Internal:
		return "INTERNAL"
	}
	return c.String()
}
