package server

import (
	"reflect"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// cacheEntryOverhead is what the cache spends per entry besides the response: its
// key, ristretto's store and policy entries.
const cacheEntryOverhead = 256

// cacheCost is the cost of a cached response: the memory it holds, so that
// --cache-bytes bounds the heap the cache takes. (A response's encoded size
// understates it 3.5–7 times: every message is its own allocation, with a header of
// 40 bytes or more, and a float or an enum takes 8 bytes in memory but one to nine
// encoded.)
func cacheCost(m proto.Message) int64 {
	if m == nil {
		return cacheEntryOverhead
	}
	return heapBytes(m.ProtoReflect()) + cacheEntryOverhead
}

// heapBytes estimates the heap a message and everything it points to take: each
// struct, string, slice and map rounded up like the allocator's size classes.
func heapBytes(m protoreflect.Message) int64 {
	if !m.IsValid() {
		return 0
	}
	n := alloc(int64(reflect.TypeOf(m.Interface()).Elem().Size()))
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.ContainingOneof() != nil && !fd.ContainingOneof().IsSynthetic() {
			n += 16 // the oneof's wrapper struct
		}
		switch {
		case fd.IsList():
			l := v.List()
			switch fd.Kind() {
			case protoreflect.MessageKind, protoreflect.GroupKind:
				n += alloc(8 * int64(l.Len()))
				for i := range l.Len() {
					n += heapBytes(l.Get(i).Message())
				}
			case protoreflect.StringKind, protoreflect.BytesKind:
				n += alloc(24 * int64(l.Len()))
				for i := range l.Len() {
					n += scalarBytes(fd, l.Get(i))
				}
			default:
				n += alloc(8 * int64(l.Len()))
			}
		case fd.IsMap():
			mp := v.Map()
			n += 48 + alloc(int64(mp.Len())*(32+16)) // header, then buckets of key and value slots
			mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				if fd.MapKey().Kind() == protoreflect.StringKind {
					n += alloc(int64(len(k.String())))
				}
				if fd.MapValue().Message() != nil {
					n += heapBytes(v.Message())
				} else {
					n += scalarBytes(fd.MapValue(), v)
				}
				return true
			})
		case fd.Message() != nil:
			n += heapBytes(v.Message())
		default:
			n += scalarBytes(fd, v)
		}
		return true
	})
	return n
}

// scalarBytes is what a scalar value points to (a string's or bytes' contents);
// the value itself is part of the struct, slice or map that holds it.
func scalarBytes(fd protoreflect.FieldDescriptor, v protoreflect.Value) int64 {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return alloc(int64(len(v.String())))
	case protoreflect.BytesKind:
		return alloc(int64(len(v.Bytes())))
	}
	return 0
}

// alloc rounds a size up roughly as the allocator's size classes do: to 16 bytes,
// plus up to an eighth for the larger classes.
func alloc(b int64) int64 {
	if b <= 0 {
		return 0
	}
	if b > 256 {
		b += b / 8
	}
	return (b + 15) &^ 15
}
