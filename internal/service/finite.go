package service

import (
	"context"
	"fmt"
	"math"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// finiteRun is run with its answer checked: a number in it that is not finite
// (an infinite step time, a NaN share) makes the call fail instead of answering
// it. The request bounds keep every answer finite; this is the guard behind them,
// so that a combination they let through is an error, never a 200.
func finiteRun(run func(context.Context) (proto.Message, error)) func(context.Context) (proto.Message, error) {
	return func(ctx context.Context) (proto.Message, error) {
		m, err := run(ctx)
		if err != nil {
			return nil, err
		}
		if err := checkFinite(m); err != nil {
			return nil, err
		}
		return m, nil
	}
}

// checkFinite fails when a number in m is not finite.
func checkFinite(m proto.Message) error {
	if path, v, ok := nonFinite(m.ProtoReflect(), ""); ok {
		// The request's fault (only extreme input gets here), but no one field is
		// to blame: INVALID_ARGUMENT naming none.
		return errorf(InvalidArgument, "the answer is not finite (%s = %v): the request's values are beyond what the models price; make them less extreme", path, v)
	}
	return nil
}

// nonFinite finds the first float or double in m (at path) that is infinite or NaN.
func nonFinite(m protoreflect.Message, path string) (at string, v float64, found bool) {
	m.Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		p := join(path, string(fd.Name()))
		switch {
		case fd.IsList():
			l := val.List()
			for i := range l.Len() {
				if at, v, found = valueNonFinite(fd, l.Get(i), fmt.Sprintf("%s[%d]", p, i)); found {
					return false
				}
			}
		case fd.IsMap():
			val.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				at, v, found = valueNonFinite(fd.MapValue(), mv, p+"."+k.String())
				return !found
			})
		default:
			at, v, found = valueNonFinite(fd, val, p)
		}
		return !found
	})
	return at, v, found
}

func valueNonFinite(fd protoreflect.FieldDescriptor, val protoreflect.Value, path string) (string, float64, bool) {
	switch fd.Kind() {
	case protoreflect.DoubleKind, protoreflect.FloatKind:
		if f := val.Float(); math.IsInf(f, 0) || math.IsNaN(f) {
			return path, f, true
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return nonFinite(val.Message(), path)
	}
	return "", 0, false
}

// join is the field path prefix.name.
func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}
