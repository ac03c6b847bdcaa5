// Package fieldpath checks the field paths that error details name against the API's
// messages, so that tests of every layer (RPCs, the REST decoder, fuzzers) hold the
// errors to the same rule: a violation names a field the request really has.
package fieldpath

import (
	"regexp"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Exists says whether path names a field of md the way errors do:
// "training.seq_len", "cluster.free_gpus[2].gpus[0]", "cluster.definition.gpu.peak_tflops.bf16"
// (a map's key is the rest of the path).
func Exists(md protoreflect.MessageDescriptor, path string) bool {
	parts := strings.Split(path, ".")
	for i, p := range parts {
		name, index, indexed := strings.Cut(p, "[")
		fd := md.Fields().ByName(protoreflect.Name(name))
		switch {
		case fd == nil, indexed && (!fd.IsList() || !listIndex.MatchString("["+index)):
			return false
		case fd.IsMap():
			return i < len(parts)-1 && fd.MapValue().Message() == nil || i == len(parts)-1
		case i == len(parts)-1:
			return true
		case fd.Message() == nil || fd.IsList() && !indexed:
			return false
		}
		md = fd.Message()
	}
	return false
}

var listIndex = regexp.MustCompile(`^\[\d+\]$`)
