package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
	"github.com/stepcost/stepcost/server/bounded"
)

// A request message that does not decode (a string that is not UTF-8, a
// truncated field) is the caller's mistake, but gRPC answers every decoding
// failure with INTERNAL, whatever the codec's error says. So the server's codec
// (decodeCodec) leaves a stepcost request that fails to decode empty and records
// why; the first interceptor (decodeFaults) answers the call INVALID_ARGUMENT,
// naming the field the wire format breaks in, before anything reads the request.

// serviceName is the package of the messages whose decoding failures are
// answered as bad input; the others' (health, reflection) keep gRPC's answer.
var servicePackage = pb.File_stepcost_v1_stepcost_proto.Package()

// undecodable holds the decoding error of a request message until its call's
// interceptor picks it up, keyed by the message.
type undecodable struct{ m sync.Map } // proto.Message → *status.Status

// decodeCodec is gRPC's proto codec with the decoding failures of stepcost
// requests recorded in faults instead of failing the call with INTERNAL, and
// answers encoded deterministically (Marshal).
type decodeCodec struct {
	encoding.CodecV2
	faults *undecodable
}

func newDecodeCodec(faults *undecodable) decodeCodec {
	return decodeCodec{CodecV2: encoding.GetCodecV2("proto"), faults: faults}
}

// Marshal is gRPC's proto codec's (google.golang.org/grpc@v1.84.0,
// encoding/proto/proto.go, codecV2.Marshal: the size, then one buffer, pooled
// when large) with Deterministic set: a map field (SearchStats.pruned, a GPU's
// peak_tflops) is written in key order, not in Go's map order, which changes from
// one encoding to the next. So the same question gets the same bytes, call after
// call and replica after replica, as the REST gateway's JSON (map keys sorted)
// already did (TestEstimatePlanAnswersAreByteIdentical).
func (c decodeCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return c.CodecV2.Marshal(v)
	}
	// UseCachedSize reuses what Size just computed; the message is not changed
	// while it is encoded.
	opts := proto.MarshalOptions{Deterministic: true, UseCachedSize: true}
	size := opts.Size(m)
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := opts.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	if _, err := opts.MarshalAppend((*buf)[:0], m); err != nil {
		pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

func (c decodeCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.CodecV2.Unmarshal(data, v)
	m, ok := v.(proto.Message)
	if !ok || m.ProtoReflect().Descriptor().ParentFile().Package() != servicePackage {
		return err
	}
	if err == nil {
		if field, rule := unknownFault(m.ProtoReflect(), ""); rule != "" {
			proto.Reset(m)
			c.faults.m.Store(m, bounded.Status(fieldStatus(field, rule)))
		}
		return nil
	}
	proto.Reset(m)
	b := data.Materialize()
	field, rule := wireFault(b, m.ProtoReflect().Descriptor(), "")
	msg := "request message: " + strings.TrimPrefix(err.Error(), "proto: ")
	st := status.New(codes.InvalidArgument, msg)
	if field != "" {
		st = fieldStatus(field, rule)
	}
	c.faults.m.Store(m, bounded.Status(st))
	return nil
}

// fieldStatus is INVALID_ARGUMENT naming field (google.rpc.BadRequest).
func fieldStatus(field, rule string) *status.Status {
	st := status.New(codes.InvalidArgument, field+": "+rule)
	if d, err := st.WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: rule}}}); err == nil {
		st = d
	}
	return st
}

// unknownFault finds, in a request that decoded, the first field the daemon
// could not read: protobuf keeps a field number the message does not have, and a
// known field sent with the wrong wire type, as unknown fields, and the request
// would be answered as if they had not been sent — a silent default where the
// REST gateway refuses an unknown JSON field. It returns the field's path (under
// prefix; an unknown number is named by its number) and what is wrong, or "" when
// every field was read.
func unknownFault(m protoreflect.Message, prefix string) (field, rule string) {
	if u := m.GetUnknown(); len(u) > 0 {
		md := m.Descriptor()
		num, typ, _ := protowire.ConsumeTag(u)
		if fd := md.Fields().ByNumber(num); fd != nil {
			return join(prefix, string(fd.Name())), fmt.Sprintf("is of type %s, which wire type %d (%s) cannot carry (a request encoded from a different stepcost.proto?)", kindOf(fd), typ, wireTypeName(typ))
		}
		return join(prefix, strconv.Itoa(int(num))), fmt.Sprintf("%s has no field number %d in this daemon (a request encoded from a newer stepcost.proto?); it is refused rather than ignored", md.FullName(), num)
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
					field, rule = unknownFault(mv.Message(), fmt.Sprintf("%s[%q]", join(prefix, string(fd.Name())), k.String()))
					return rule == ""
				})
			}
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := range l.Len() {
				if field, rule = unknownFault(l.Get(i).Message(), fmt.Sprintf("%s[%d]", join(prefix, string(fd.Name())), i)); rule != "" {
					break
				}
			}
		case fd.Message() != nil:
			field, rule = unknownFault(v.Message(), join(prefix, string(fd.Name())))
		}
		return rule == ""
	})
	return field, rule
}

// wireTypeName is how protobuf's encoding guide names a wire type.
func wireTypeName(t protowire.Type) string {
	switch t {
	case protowire.VarintType:
		return "varint"
	case protowire.Fixed64Type:
		return "I64"
	case protowire.BytesType:
		return "LEN"
	case protowire.StartGroupType:
		return "SGROUP"
	case protowire.EndGroupType:
		return "EGROUP"
	case protowire.Fixed32Type:
		return "I32"
	}
	return "unknown"
}

// decodeFaults answers a call whose request did not decode (see decodeCodec).
func decodeFaults(faults *undecodable) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if st, ok := faults.m.LoadAndDelete(req); ok {
			return nil, st.(*status.Status).Err()
		}
		return h(ctx, req)
	}
}

// wireFault finds where b, an encoding of md, breaks: the path of the field
// (under prefix) and what is wrong, or "" when the message cannot be read past
// its first field (garbage).
func wireFault(b []byte, md protoreflect.MessageDescriptor, prefix string) (field, rule string) {
	seen := map[protowire.Number]int{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return prefix, "is not a valid message: " + protowire.ParseError(n).Error()
		}
		b = b[n:]
		fd := md.Fields().ByNumber(num)
		path := prefix
		if fd != nil {
			path = join(prefix, string(fd.Name()))
			if fd.IsList() {
				path = fmt.Sprintf("%s[%d]", path, seen[num])
			}
			seen[num]++
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return path, "is not a valid " + kindOf(fd) + ": " + protowire.ParseError(n).Error()
		}
		value := b[:n]
		b = b[n:]
		if fd == nil || typ != protowire.BytesType {
			continue // unknown fields and scalars of the wrong wire type are kept as unknown
		}
		v, _ := protowire.ConsumeBytes(value)
		switch {
		case fd.Kind() == protoreflect.StringKind && !utf8.Valid(v):
			return path, "must be valid UTF-8 text"
		case fd.Message() != nil:
			if f, r := wireFault(v, fd.Message(), path); r != "" {
				return f, r
			}
		}
	}
	return "", ""
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func kindOf(fd protoreflect.FieldDescriptor) string {
	if fd == nil {
		return "field"
	}
	if fd.Message() != nil {
		return "message"
	}
	return fd.Kind().String()
}
