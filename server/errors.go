package server

import (
	"context"
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// notFoundError is an unknown catalog name in a request field.
type notFoundError struct {
	field string
	err   error
}

func (e *notFoundError) Error() string { return e.field + ": " + e.err.Error() }
func (e *notFoundError) Unwrap() error { return e.err }

func notFound(field string, err error) error { return &notFoundError{field, err} }

// limitError is a request over one of the service's limits.
type limitError struct {
	field, msg string
}

func (e *limitError) Error() string { return e.field + ": " + e.msg }

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
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	var nf *notFoundError
	if errors.As(err, &nf) {
		return withViolations(codes.NotFound, err, []*errdetails.BadRequest_FieldViolation{{Field: nf.field, Description: nf.err.Error()}})
	}
	// A request over one of the service's limits is the caller's to change, not to
	// retry: InvalidArgument (HTTP 400), naming the field and the limit. Being busy
	// (admission) stays ResourceExhausted (HTTP 429).
	var le *limitError
	if errors.As(err, &le) {
		return withViolations(codes.InvalidArgument, err, []*errdetails.BadRequest_FieldViolation{{Field: le.field, Description: le.msg}})
	}
	if vs := violations(err); len(vs) > 0 {
		return withViolations(codes.InvalidArgument, err, vs)
	}
	if errors.Is(err, collective.ErrUnsupported) || errors.Is(err, step.ErrUnsupported) {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

func isDomain(err error) bool {
	var nf *notFoundError
	var le *limitError
	return invalid.Is(err) || errors.As(err, &nf) || errors.As(err, &le)
}

// violations collects every field error inside err (joined errors included).
func violations(err error) []*errdetails.BadRequest_FieldViolation {
	var out []*errdetails.BadRequest_FieldViolation
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if fe, ok := e.(*invalid.Error); ok {
			out = append(out, &errdetails.BadRequest_FieldViolation{Field: fe.Field, Description: fe.Rule})
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

func withViolations(code codes.Code, err error, vs []*errdetails.BadRequest_FieldViolation) error {
	st := status.New(code, err.Error())
	if d, derr := st.WithDetails(&errdetails.BadRequest{FieldViolations: vs}); derr == nil {
		st = d
	}
	return st.Err()
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
