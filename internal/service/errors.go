package service

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Code is the kind of a failed call, as the API answers it. Errors are typed where
// they arise (a field error in estimator/invalid, an unknown catalog name or a
// limit in internal/wire, a context error, an Error of this package) and CodeOf
// classifies them; the server turns a Code into a gRPC status in one place, and a
// RankConfigs item carries its name.
type Code int

const (
	// Internal is a failure that is not the caller's: a bug.
	Internal Code = iota
	// InvalidArgument is a request the service refuses as it is: a field out of
	// range, a combination the models do not price, or a request over one of the
	// service's limits (the caller's to change, not to retry).
	InvalidArgument
	// NotFound is an unknown catalog name.
	NotFound
	// FailedPrecondition is a valid request whose answer has nothing to show (a
	// picture of a search that found no plan).
	FailedPrecondition
	// DeadlineExceeded is a call that ran out of time.
	DeadlineExceeded
	// Canceled is a call its caller gave up.
	Canceled
)

// String is the code's name in the API (the gRPC code names).
func (c Code) String() string {
	switch c {
	case InvalidArgument:
		return "INVALID_ARGUMENT"
	case NotFound:
		return "NOT_FOUND"
	case FailedPrecondition:
		return "FAILED_PRECONDITION"
	case DeadlineExceeded:
		return "DEADLINE_EXCEEDED"
	case Canceled:
		return "CANCELLED"
	}
	return "INTERNAL"
}

// Error is a failure of this package's own making, with its code.
type Error struct {
	Code Code
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func errorf(c Code, format string, args ...any) error {
	return &Error{Code: c, Msg: fmt.Sprintf(format, args...)}
}

// Violation is one field at fault.
type Violation struct{ Field, Description string }

// Typed reports whether CodeOf knows err: a field error, an unknown name, a
// limit, an unsupported combination, a context error or an Error. Other errors
// (a transport's own status, say) are the caller's to keep as they are.
func Typed(err error) bool {
	var nf *wire.NotFoundError
	var le *wire.LimitError
	var e *Error
	return invalid.Is(err) || errors.As(err, &nf) || errors.As(err, &le) || errors.As(err, &e) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, collective.ErrUnsupported) || errors.Is(err, step.ErrUnsupported)
}

// CodeOf classifies err: field errors and limits InvalidArgument with the fields
// violated, unknown catalog names NotFound with theirs, context errors their own
// codes, an Error its code, and anything else Internal.
func CodeOf(err error) (Code, []Violation) {
	switch {
	case errors.Is(err, context.Canceled):
		return Canceled, nil
	case errors.Is(err, context.DeadlineExceeded):
		return DeadlineExceeded, nil
	}
	var nf *wire.NotFoundError
	if errors.As(err, &nf) {
		return NotFound, []Violation{{nf.Field, nf.Err.Error()}}
	}
	var le *wire.LimitError
	if errors.As(err, &le) {
		return InvalidArgument, []Violation{{le.Field, le.Msg}}
	}
	if fs := wire.FieldErrors(err); len(fs) > 0 {
		vs := make([]Violation, len(fs))
		for i, f := range fs {
			vs[i] = Violation{f.Field, f.Rule}
		}
		return InvalidArgument, vs
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code, nil
	}
	if errors.Is(err, collective.ErrUnsupported) || errors.Is(err, step.ErrUnsupported) {
		return InvalidArgument, nil
	}
	return Internal, nil
}

// APICodeOf is CodeOf as the API answers a caller, with err's message: each field
// error's rule with the values of enum-valued fields spelled as the API names
// them (wire.APIRule: SCHEDULE_ZB_H1 where the command line takes zb-h1), in its
// violation and in the message.
func APICodeOf(err error) (Code, []Violation, string) {
	code, vs := CodeOf(err)
	msg := err.Error()
	if code != InvalidArgument {
		return code, vs, msg
	}
	fs := wire.FieldErrors(err)
	if len(fs) != len(vs) {
		return code, vs, msg
	}
	for i, f := range fs {
		api := wire.APIRule(f)
		if api == f.Rule {
			continue
		}
		vs[i].Description = api
		msg = strings.Replace(msg, f.Error(), f.Field+": "+api, 1)
	}
	return code, vs, msg
}

// ItemError is the error of one RankConfigs item: its code's name, its message
// and the fields at fault.
func ItemError(err error) *pb.ItemError {
	code, vs := CodeOf(err)
	return itemError(code, vs, err.Error())
}

// APIItemError is ItemError as the API answers a caller (APICodeOf).
func APIItemError(err error) *pb.ItemError {
	return itemError(APICodeOf(err))
}

func itemError(code Code, vs []Violation, msg string) *pb.ItemError {
	out := &pb.ItemError{Code: code.String(), Message: msg}
	for _, v := range vs {
		out.Violations = append(out.Violations, &pb.FieldViolation{Field: v.Field, Description: v.Description})
	}
	return out
}
