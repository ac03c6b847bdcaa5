package service

import (
	"math"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// positiveZeros is req with every float and double that is -0 made 0: IEEE 754
// -0 equals 0, but the wire keeps its sign (protobuf encodes its bits, JSON spells
// it "-0"), so without this a request sending -0 would have its own cache entry
// and quote "-0" in an error the same request with 0 words otherwise. req itself
// when it holds no -0 (the usual case: nothing is copied), else a copy.
// TestSignedZeroIsZeroInEveryFloatField covers every float field of every cached
// request.
func positiveZeros[M proto.Message](req M) M {
	if !hasNegZero(req.ProtoReflect()) {
		return req
	}
	c := proto.CloneOf(req)
	clearNegZero(c.ProtoReflect())
	return c
}

func isNegZero(v protoreflect.Value) bool {
	f := v.Float()
	return f == 0 && math.Signbit(f)
}

func isFloat(fd protoreflect.FieldDescriptor) bool {
	return fd.Kind() == protoreflect.DoubleKind || fd.Kind() == protoreflect.FloatKind
}

// hasNegZero tells whether a float or double in m, however deep, is -0.
func hasNegZero(m protoreflect.Message) bool {
	found := false
	eachFloat(m, func(protoreflect.Value) protoreflect.Value { return protoreflect.Value{} }, func(v protoreflect.Value) bool {
		found = found || isNegZero(v)
		return !found
	})
	return found
}

// clearNegZero sets every float and double of m that is -0 to 0.
func clearNegZero(m protoreflect.Message) {
	eachFloat(m, func(v protoreflect.Value) protoreflect.Value {
		if !isNegZero(v) {
			return protoreflect.Value{}
		}
		if _, ok := v.Interface().(float32); ok {
			return protoreflect.ValueOfFloat32(0)
		}
		return protoreflect.ValueOfFloat64(0)
	}, func(protoreflect.Value) bool { return true })
}

// eachFloat visits every float and double set in m: visit says whether to go on;
// replace returns the value to store instead (an invalid Value: keep it).
func eachFloat(m protoreflect.Message, replace func(protoreflect.Value) protoreflect.Value, visit func(protoreflect.Value) bool) bool {
	if holdsNoFloat(m.Descriptor()) {
		return true
	}
	goOn := true
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; goOn && i < l.Len(); i++ {
				if isFloat(fd) {
					goOn = visit(l.Get(i))
					if r := replace(l.Get(i)); r.IsValid() {
						l.Set(i, r)
					}
				} else if fd.Message() != nil {
					goOn = eachFloat(l.Get(i).Message(), replace, visit)
				}
			}
		case fd.IsMap():
			vd := fd.MapValue()
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				if isFloat(vd) {
					goOn = visit(mv)
					if r := replace(mv); r.IsValid() {
						v.Map().Set(k, r)
					}
				} else if vd.Message() != nil {
					goOn = eachFloat(mv.Message(), replace, visit)
				}
				return goOn
			})
		case isFloat(fd):
			goOn = visit(v)
			if r := replace(v); r.IsValid() {
				m.Set(fd, r)
			}
		case fd.Message() != nil:
			goOn = eachFloat(v.Message(), replace, visit)
		}
		return goOn
	})
	return goOn
}
