package server

import (
	"context"
	"fmt"
	"math"
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
		var b []byte
		if len(data) == 1 {
			b = data[0].ReadOnlyData() // not kept: read here and dropped
		} else {
			b = data.Materialize()
		}
		if field, rule := readFault(b, m.ProtoReflect().Descriptor(), ""); rule != "" {
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

// readFault finds, in the encoding b of a request of md that decoded, the first
// field the daemon would not read as sent: protobuf keeps a field number the
// message does not have, and a known field sent with the wrong wire type, as
// unknown fields (the request answered as if they had not been sent), and cuts
// the varint of a 32-bit integer or enum field to its low 32 bits (2³² + 32 GPUs
// read as 32) — silent defaults where the REST gateway refuses an unknown JSON
// field or an integer out of range. It returns the field's path (under prefix;
// an unknown number is named by its number) and what is wrong, or "" when every
// field reads as sent.
func readFault(b []byte, md protoreflect.MessageDescriptor, prefix string) (field, rule string) {
	seen := map[protowire.Number]int{}
	given := fieldsGiven{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return prefix, "is not a valid message" // not expected: the message decoded
		}
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return prefix, "is not a valid message"
		}
		value := b[:n]
		b = b[n:]
		fd := md.Fields().ByNumber(num)
		if fd == nil {
			return join(prefix, strconv.Itoa(int(num))), fmt.Sprintf("%s has no field number %d in this daemon (a request encoded from a newer stepcost.proto?); it is refused rather than ignored", md.FullName(), num)
		}
		path := join(prefix, string(fd.Name()))
		// i is the index of the list's element read now (packed or not), and at
		// its path, formatted only for an element at fault: formatting every
		// element's took a list of 1.9 million entries 1.3 s.
		i := seen[num]
		at := func(i int) string {
			if !fd.IsList() {
				return path
			}
			return fmt.Sprintf("%s[%d]", path, i)
		}
		if fd.IsList() {
			seen[num]++
		}
		want := wireTypeOf(fd.Kind())
		switch {
		case typ == want && typ == protowire.VarintType:
			v, _ := protowire.ConsumeVarint(value)
			if r := varintRange(fd.Kind(), v); r != "" {
				return at(i), r
			}
		case typ == want && fd.Message() != nil:
			v, _ := protowire.ConsumeBytes(value)
			if f, r := readFault(v, fd.Message(), at(i)); r != "" {
				return f, r
			}
		case typ == want:
		case typ == protowire.BytesType && fd.IsList() && want != protowire.BytesType:
			// A packed list of scalars: one element each.
			v, _ := protowire.ConsumeBytes(value)
			for ; len(v) > 0; i++ {
				var m int
				if want == protowire.VarintType {
					var x uint64
					x, m = protowire.ConsumeVarint(v)
					if m > 0 {
						if r := varintRange(fd.Kind(), x); r != "" {
							return at(i), r
						}
					}
				} else {
					m = protowire.ConsumeFieldValue(0, want, v)
				}
				if m < 0 {
					return path, "is not a valid packed list"
				}
				v = v[m:]
			}
			seen[num] = i
		default:
			return path, fmt.Sprintf("is of type %s, which wire type %d (%s) cannot carry (a request encoded from a different stepcost.proto?)", kindOf(fd), typ, wireTypeName(typ))
		}
		if f, r := given.add(fd, path, value); r != "" {
			return f, r
		}
	}
	return "", ""
}

// fieldsGiven is what one message of a request has given so far, for the fields
// protobuf would keep only the last of: a field that is not a list given twice,
// two fields of a oneof, a map key twice. Each is refused, as the REST gateway
// refuses the JSON ("is given twice", "only one of … may be given", a duplicate
// map key), instead of answering with the first value silently dropped (top_k 3
// then 4 answered 4 plans; a model by name then by parameter count answered for
// the count; peak_tflops bf16 900 then 100 priced at 100).
type fieldsGiven struct {
	fields indexSet        // by the field's index in its message
	oneofs indexSet        // by the oneof's index in its message
	keys   map[string]bool // "number/key" of the map entries given
}

// indexSet is a set of small indices: a bit each below 64 (no allocation on the
// path every request takes), a map above.
type indexSet struct {
	low  uint64
	high map[int]bool
}

// add adds i and says whether it was there already.
func (s *indexSet) add(i int) (had bool) {
	if i < 64 {
		had = s.low&(1<<i) != 0
		s.low |= 1 << i
		return had
	}
	if s.high == nil {
		s.high = map[int]bool{}
	}
	had = s.high[i]
	s.high[i] = true
	return had
}

// add records field fd, given at path with its value's encoding (tag excluded),
// and names what it makes ambiguous: path and the rule, or "" when nothing.
func (g *fieldsGiven) add(fd protoreflect.FieldDescriptor, path string, value []byte) (field, rule string) {
	switch {
	case fd.IsMap():
		entry, _ := protowire.ConsumeBytes(value)
		key := mapKey(entry, fd.MapKey())
		if g.keys == nil {
			g.keys = map[string]bool{}
		}
		id := strconv.Itoa(int(fd.Number())) + "/" + key
		if g.keys[id] {
			return join(path, key), fmt.Sprintf("duplicate map key %q", key)
		}
		g.keys[id] = true
	case fd.IsList():
	default:
		if g.fields.add(fd.Index()) {
			return path, "is given twice"
		}
		if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() && g.oneofs.add(o.Index()) {
			names := make([]string, o.Fields().Len())
			for i := range names {
				names[i] = string(o.Fields().Get(i).Name())
			}
			return path, "only one of " + strings.Join(names, ", ") + " may be given"
		}
	}
	return "", ""
}

// mapKey is the key of a map entry's encoding, as text (the key's default when the
// entry leaves it out).
func mapKey(entry []byte, kd protoreflect.FieldDescriptor) string {
	key := ""
	if kd.Kind() == protoreflect.BoolKind {
		key = "false"
	} else if kd.Kind() != protoreflect.StringKind {
		key = "0"
	}
	for len(entry) > 0 {
		num, typ, n := protowire.ConsumeTag(entry)
		if n < 0 {
			break
		}
		entry = entry[n:]
		n = protowire.ConsumeFieldValue(num, typ, entry)
		if n < 0 {
			break
		}
		if num == 1 {
			switch typ {
			case protowire.BytesType:
				v, _ := protowire.ConsumeBytes(entry[:n])
				key = string(v)
			case protowire.VarintType:
				v, _ := protowire.ConsumeVarint(entry[:n])
				switch kd.Kind() {
				case protoreflect.BoolKind:
					key = strconv.FormatBool(v != 0)
				case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
					key = strconv.FormatInt(protowire.DecodeZigZag(v), 10)
				case protoreflect.Int32Kind, protoreflect.Int64Kind:
					key = strconv.FormatInt(int64(v), 10)
				default:
					key = strconv.FormatUint(v, 10)
				}
			}
		}
		entry = entry[n:]
	}
	return key
}

// wireTypeOf is the wire type of a field of kind k (not packed).
func wireTypeOf(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return protowire.BytesType
	case protoreflect.GroupKind:
		return protowire.StartGroupType
	}
	return protowire.VarintType
}

// varintRange says what is wrong with varint v as a field of kind k: a value
// beyond the kind's 32 bits, which protobuf would cut; "" when it fits.
func varintRange(k protoreflect.Kind, v uint64) string {
	const limits = "must be an integer between -2147483648 and 2147483647"
	switch k {
	case protoreflect.Int32Kind, protoreflect.EnumKind:
		if x := int64(v); x < math.MinInt32 || x > math.MaxInt32 {
			return fmt.Sprintf("%s (got %d)", limits, x)
		}
	case protoreflect.Sint32Kind:
		if x := protowire.DecodeZigZag(v); x < math.MinInt32 || x > math.MaxInt32 {
			return fmt.Sprintf("%s (got %d)", limits, x)
		}
	case protoreflect.Uint32Kind:
		if v > math.MaxUint32 {
			return fmt.Sprintf("must be an integer between 0 and 4294967295 (got %d)", v)
		}
	}
	return ""
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
