package server

import (
	"context"
	"errors"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stepcost/stepcost/internal/service"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
	"github.com/stepcost/stepcost/server/bounded"
)

// grpcCodes are the gRPC codes of the service's (service.Code). A request over one
// of the service's limits is InvalidArgument (HTTP 400): the caller's to change,
// not to retry. Being busy (admission) is the admission control's own Unavailable.
var grpcCodes = map[service.Code]codes.Code{
	service.Internal:           codes.Internal,
	service.InvalidArgument:    codes.InvalidArgument,
	service.NotFound:           codes.NotFound,
	service.FailedPrecondition: codes.FailedPrecondition,
	service.DeadlineExceeded:   codes.DeadlineExceeded,
	service.Canceled:           codes.Canceled,
}

// toStatus is the one place a call's error becomes a gRPC status: the service's
// typed errors (service.APICodeOf) their code, field errors InvalidArgument with a
// BadRequest listing the fields violated (bounded), the values of enum-valued
// fields named as the API names them (SCHEDULE_ZB_H1, not the command line's
// zb-h1), and errors that are already a status (admission control's) as they
// are. A call cancelled once its deadline had passed ran out of time (ranOut).
func toStatus(ctx context.Context, err error) error {
	return statusOf(ctx, err, service.APICodeOf)
}

// asWritten is toStatus with the field errors' rules as written (service.CodeOf),
// for the calls whose fields take the domain's spellings as strings.
func asWritten(ctx context.Context, err error) error {
	return statusOf(ctx, err, func(err error) (service.Code, []service.Violation, string) {
		c, vs := service.CodeOf(err)
		return c, vs, err.Error()
	})
}

func statusOf(ctx context.Context, err error, codeOf func(error) (service.Code, []service.Violation, string)) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok && !service.Typed(err) {
		return err
	}
	code, vs, text := codeOf(err)
	if code == service.Canceled && ranOut(ctx) {
		code = service.DeadlineExceeded
		text = strings.ReplaceAll(text, context.Canceled.Error(), context.DeadlineExceeded.Error())
	}
	c, ok := grpcCodes[code]
	if !ok {
		c = codes.Internal
	}
	if len(vs) == 0 {
		return status.Error(c, bounded.Text(text, bounded.MaxMessage))
	}
	// The answer lists the first violations and counts them all: a request can hold
	// 100 000 bad map keys, and their every violation would be megabytes of trailers.
	fv := make([]*errdetails.BadRequest_FieldViolation, len(vs))
	for i, v := range vs {
		fv[i] = &errdetails.BadRequest_FieldViolation{Field: v.Field, Description: v.Description}
	}
	fv = bounded.Violations(fv)
	msg := bounded.Message(fv, len(vs))
	if len(vs) <= bounded.MaxViolations {
		msg = bounded.Text(text, bounded.MaxMessage)
	}
	st := status.New(c, msg)
	if d, derr := st.WithDetails(&errdetails.BadRequest{FieldViolations: fv}); derr == nil {
		st = d
	}
	return st.Err()
}

// ranOut reports whether ctx, cancelled, carried a deadline that has passed. A
// gRPC client whose deadline fires resets the stream (RST_STREAM CANCEL, as a
// cancel does: grpc-go internal/transport/http2_client.go closeStream), and the
// reset cancels the call's context (http2_server.go handleRSTStream) when it comes
// before the server's timer for the same deadline (set from the grpc-timeout
// header on arrival, a transit after the client's; under load the scheduler runs
// the transport's reader first): the context's error is then Canceled, although
// the deadline ended the call. The REST gateway is such a client of the
// in-process server. A cancel before the deadline stays CANCELLED.
func ranOut(ctx context.Context) bool {
	if !errors.Is(ctx.Err(), context.Canceled) {
		return false
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// boundItem bounds the error of one RankConfigs item as toStatus bounds a call's:
// the first violations, with the count of all in the message.
func boundItem(e *pb.ItemError) *pb.ItemError {
	vs := e.GetViolations()
	fv := make([]*errdetails.BadRequest_FieldViolation, len(vs))
	for i, v := range vs {
		fv[i] = &errdetails.BadRequest_FieldViolation{Field: v.GetField(), Description: v.GetDescription()}
	}
	fv = bounded.Violations(fv)
	msg := bounded.Text(e.GetMessage(), bounded.MaxMessage)
	if len(vs) > bounded.MaxViolations {
		msg = bounded.Message(fv, len(vs))
	}
	out := &pb.ItemError{Code: e.GetCode(), Message: msg}
	for _, v := range fv {
		out.Violations = append(out.Violations, &pb.FieldViolation{Field: v.GetField(), Description: v.GetDescription()})
	}
	return out
}
