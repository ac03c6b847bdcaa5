// Package bounded keeps error answers small whatever the request: a status
// carries at most MaxViolations field violations (the first ones, with the count
// of all in the message), every text in it at most a few hundred bytes, and only
// valid UTF-8 (an error answer JSON cannot encode turns into a 500 at the REST
// gateway). A request can be made of 100 000 bad map keys in 1.5 MB; its answer
// must not be 21 MB of violations: gRPC carries a status in the trailers, and
// trailers over the peer's header-list limit cost the connection, not just the
// call.
package bounded

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
)

// Limits of an error answer. With them a status is at most about
// MaxMessage + MaxViolations × 2 × MaxText ≈ 20 KiB, far under the header-list
// limits of gRPC peers (16 MiB by default, 1 MiB on the gateway's connection).
const (
	// MaxViolations is how many field violations an answer lists: enough for every
	// field of a request that is wrong in a few places, and the count says how many
	// there were in all.
	MaxViolations = 20
	// MaxText bounds a violation's field path and description: a description
	// states a rule and the value received, which is echoed shortened.
	MaxText = 400
	// MaxMessage bounds a status message.
	MaxMessage = 4 << 10
)

// Text is s as valid UTF-8 (invalid bytes as U+FFFD) cut to at most n bytes on a
// rune boundary, with "…" and the original length when it was cut.
func Text(s string, n int) string {
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

// Violations is vs bounded: the first MaxViolations, each field and description
// cut to MaxText.
func Violations(vs []*errdetails.BadRequest_FieldViolation) []*errdetails.BadRequest_FieldViolation {
	if len(vs) > MaxViolations {
		vs = vs[:MaxViolations]
	}
	out := make([]*errdetails.BadRequest_FieldViolation, len(vs))
	for i, v := range vs {
		out[i] = &errdetails.BadRequest_FieldViolation{Field: Text(v.GetField(), MaxText), Description: Text(v.GetDescription(), MaxText)}
	}
	return out
}

// Message is the message of an error of n field violations, the first of them
// vs: their "field: description" lines (as errors.Join writes them) and, when
// there were more than listed, how many in all.
func Message(vs []*errdetails.BadRequest_FieldViolation, n int) string {
	var b strings.Builder
	for i, v := range vs {
		line := Text(v.GetField(), MaxText) + ": " + Text(v.GetDescription(), MaxText)
		if i == MaxViolations || b.Len()+len(line) > MaxMessage-100 { // room for the count
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
	}
	if n > MaxViolations {
		fmt.Fprintf(&b, "\n(%d violations; the first %d are listed)", n, MaxViolations)
	}
	return b.String()
}

// Status is st bounded: its message cut to MaxMessage, its BadRequest details to
// MaxViolations violations (the message then counting them all), and every other
// detail dropped if the whole would still be larger than a bounded answer.
func Status(st *status.Status) *status.Status {
	p := st.Proto()
	small := len(p.GetMessage()) <= MaxMessage && utf8.ValidString(p.GetMessage())
	if small && proto.Size(p) <= MaxMessage+2*MaxViolations*(MaxText+32) {
		valid := true
		for _, d := range st.Details() {
			if br, ok := d.(*errdetails.BadRequest); ok {
				for _, v := range br.GetFieldViolations() {
					valid = valid && utf8.ValidString(v.GetField()) && utf8.ValidString(v.GetDescription())
				}
			}
		}
		if valid {
			return st
		}
	}
	msg := p.GetMessage()
	var details []protoadapt.MessageV1
	for _, d := range st.Details() {
		br, ok := d.(*errdetails.BadRequest)
		if !ok {
			continue // nothing of the service's but BadRequest: not worth the room
		}
		n := len(br.GetFieldViolations())
		vs := Violations(br.GetFieldViolations())
		if n > len(vs) {
			msg = Message(vs, n)
		}
		details = append(details, &errdetails.BadRequest{FieldViolations: vs})
	}
	out := status.New(st.Code(), Text(msg, MaxMessage))
	if len(details) > 0 {
		if d, err := out.WithDetails(details...); err == nil {
			out = d
		}
	}
	return out
}

// Error is err bounded, if it is a status (or holds one); other errors are
// returned as they are.
func Error(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	b := Status(st)
	if b == st {
		return err
	}
	return b.Err()
}
