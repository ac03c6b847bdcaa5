package service

import (
	"context"
	"fmt"
	"math"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// finiteRun is run with its answer checked: a number in it that is not finite
// (an infinite step time, a NaN share) makes the call fail instead of answering
// it. The request bounds keep every answer finite; this is the guard behind them,
// so that a combination they let through is an error, never a 200. An answer whose
// caller has gone is neither checked nor returned.
func finiteRun(run func(context.Context) (proto.Message, error)) func(context.Context) (proto.Message, error) {
	return func(ctx context.Context) (proto.Message, error) {
		m, err := run(ctx)
		if err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := checkFinite(m); err != nil {
			return nil, err
		}
		return m, nil
	}
}

// checkFinite fails when a number in m is not finite. It allocates only to name
// the field it reports: the answers it reads list up to every node of a job (12 288
// in a plan on 98 304 GPUs, times top_k plans).
func checkFinite(m proto.Message) error {
	if path, v, ok := nonFinite(m.ProtoReflect()); ok {
		// The request's fault (only extreme input gets here), but no one field is
		// to blame: INVALID_ARGUMENT naming none.
		return errorf(InvalidArgument, "the answer is not finite (%s = %v): the request's values are beyond what the models price; make them less extreme", path, v)
	}
	return nil
}

// floatFree records, by message type, whether the type can hold no float or
// double however deep (NodeUse, Placement): such messages are not walked.
var floatFree sync.Map // protoreflect.FullName → bool

// holdsNoFloat tells whether no message of type md can hold a float or a double.
func holdsNoFloat(md protoreflect.MessageDescriptor) bool {
	if v, ok := floatFree.Load(md.FullName()); ok {
		return v.(bool)
	}
	free := noFloat(md, map[protoreflect.FullName]bool{})
	floatFree.Store(md.FullName(), free)
	return free
}

func noFloat(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) bool {
	if seen[md.FullName()] {
		return true // a cycle: decided by the other fields
	}
	seen[md.FullName()] = true
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.IsMap() {
			fd = fd.MapValue()
		}
		switch fd.Kind() {
		case protoreflect.DoubleKind, protoreflect.FloatKind:
			return false
		case protoreflect.MessageKind, protoreflect.GroupKind:
			if !noFloat(fd.Message(), seen) {
				return false
			}
		}
	}
	return true
}

// nonFinite finds the first float or double in m that is infinite or NaN, and its
// path from m (built only then, as the recursion unwinds).
func nonFinite(m protoreflect.Message) (at string, v float64, found bool) {
	if holdsNoFloat(m.Descriptor()) {
		return "", 0, false
	}
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		val := m.Get(fd)
		switch {
		case fd.IsList():
			l := val.List()
			for j := range l.Len() {
				if at, v, found = valueNonFinite(fd, l.Get(j)); found {
					return join(fmt.Sprintf("%s[%d]", fd.Name(), j), at), v, true
				}
			}
		case fd.IsMap():
			vd := fd.MapValue()
			if vd.Kind() != protoreflect.DoubleKind && vd.Kind() != protoreflect.FloatKind &&
				(vd.Kind() != protoreflect.MessageKind || holdsNoFloat(vd.Message())) {
				continue
			}
			var key string
			val.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				if at, v, found = valueNonFinite(vd, mv); found {
					key = k.String()
				}
				return !found
			})
			if found {
				return join(string(fd.Name())+"."+key, at), v, true
			}
		default:
			if at, v, found = valueNonFinite(fd, val); found {
				return join(string(fd.Name()), at), v, true
			}
		}
	}
	return "", 0, false
}

// valueNonFinite checks one value of field fd; the path it returns is below fd.
func valueNonFinite(fd protoreflect.FieldDescriptor, val protoreflect.Value) (string, float64, bool) {
	switch fd.Kind() {
	case protoreflect.DoubleKind, protoreflect.FloatKind:
		if f := val.Float(); math.IsInf(f, 0) || math.IsNaN(f) {
			return "", f, true
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return nonFinite(val.Message())
	}
	return "", 0, false
}

// join is the field path prefix.rest (prefix alone when rest is empty).
func join(prefix, rest string) string {
	if rest == "" {
		return prefix
	}
	return prefix + "." + rest
}
