package wire

import (
	"context"
	"errors"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// NotFoundError is an unknown catalog name in a request field.
type NotFoundError struct {
	Field string
	Err   error
}

func (e *NotFoundError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *NotFoundError) Unwrap() error { return e.Err }

// NotFound is err for an unknown catalog name in field.
func NotFound(field string, err error) error { return &NotFoundError{field, err} }

// LimitError is a request over one of the service's limits.
type LimitError struct {
	Field, Msg string
}

func (e *LimitError) Error() string { return e.Field + ": " + e.Msg }

// IsDomain reports whether err is an error of a request's content: a field error,
// an unknown catalog name or a limit.
func IsDomain(err error) bool {
	var nf *NotFoundError
	var le *LimitError
	return invalid.Is(err) || errors.As(err, &nf) || errors.As(err, &le)
}

// FieldErrors collects every field error inside err (joined errors included).
func FieldErrors(err error) []*invalid.Error {
	var out []*invalid.Error
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if fe, ok := e.(*invalid.Error); ok {
			out = append(out, fe)
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

// Code names the API status code of a domain error, as the service answers it:
// field errors and limits INVALID_ARGUMENT (with the fields violated), unknown
// catalog names NOT_FOUND, context errors their own codes, and anything else
// INTERNAL.
func Code(err error) (code string, violations []*pb.FieldViolation) {
	switch {
	case errors.Is(err, context.Canceled):
		return "CANCELLED", nil
	case errors.Is(err, context.DeadlineExceeded):
		return "DEADLINE_EXCEEDED", nil
	}
	var nf *NotFoundError
	if errors.As(err, &nf) {
		return "NOT_FOUND", []*pb.FieldViolation{{Field: nf.Field, Description: nf.Err.Error()}}
	}
	var le *LimitError
	if errors.As(err, &le) {
		return "INVALID_ARGUMENT", []*pb.FieldViolation{{Field: le.Field, Description: le.Msg}}
	}
	if fs := FieldErrors(err); len(fs) > 0 {
		for _, f := range fs {
			violations = append(violations, &pb.FieldViolation{Field: f.Field, Description: f.Rule})
		}
		return "INVALID_ARGUMENT", violations
	}
	if errors.Is(err, collective.ErrUnsupported) || errors.Is(err, step.ErrUnsupported) {
		return "INVALID_ARGUMENT", nil
	}
	return "INTERNAL", nil
}

// ItemError is the error of one RankConfigs item.
func ItemError(err error) *pb.ItemError {
	code, vs := Code(err)
	return &pb.ItemError{Code: code, Message: err.Error(), Violations: vs}
}

// Limit is the error of a request over a limit of the service, in field.
func Limit(field, msg string) error { return &LimitError{Field: field, Msg: msg} }
