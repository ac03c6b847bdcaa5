package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/topology"
)

// ErrSyntax is wrapped by DecodeSpec errors for input that is not a single
// well-formed JSON object. Every other DecodeSpec error holds an *invalid.Error
// naming the offending field.
var ErrSyntax = errors.New("malformed cluster description")

// DecodeSpec reads a cluster description: the JSON form of topology.Spec, with two
// conveniences.
//
//   - "gpu" may be a catalog GPU name ("H100", "mi300x") instead of an object.
//   - "base": "<system name>" starts from that catalog system. The file is decoded
//     over a copy of it: a field the file gives replaces the base's value, a field it
//     leaves out keeps it. Objects (intra, nics, network, and gpu when given as an
//     object) merge field by field the same way, gpu.peak_tflops merges per dtype,
//     arrays (nics.gpu_nic) are replaced whole, null leaves a field as it was, and
//     "gpu": "<name>" replaces the whole GPU. The name, too, is the base's unless
//     the file gives one.
//
// "nodes" defaults to 1 when omitted. Decoding is strict: keys are case-sensitive,
// unknown or repeated keys and anything after the object are errors, and values must
// have the JSON type of their field. The result is validated with Spec.Validate.
// Errors name the field by its JSON path ("nics.gbps"); malformed JSON wraps
// ErrSyntax and gives the line, column and byte offset.
func DecodeSpec(data []byte) (topology.Spec, error) {
	base, hasBase, err := scan(data)
	if err != nil {
		return topology.Spec{}, err
	}
	spec := topology.Spec{Nodes: 1}
	if hasBase {
		i, ok := systemIndex[normalise(base)]
		if !ok {
			return topology.Spec{}, &invalid.Error{Field: "base", Rule: unknownRule("system", base, systemNames())}
		}
		spec = cloneSpec(systemTable[i].spec)
	}
	w := wireSpec{Spec: &spec, GPU: gpuRef{gpu: cloneGPU(spec.GPU)}}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return topology.Spec{}, decodeError(data, err, "")
	}
	spec.GPU = w.GPU.gpu
	if err := emptyHostCPU(data); err != nil {
		return topology.Spec{}, err
	}
	if err := spec.Validate(); err != nil {
		return topology.Spec{}, err
	}
	return spec, nil
}

// emptyHostCPU refuses a host.cpu given as "": decoded over a base system it would
// replace the base's CPU (gb200-nvl72's Grace) with the unstated one, x86, without
// a word. Leaving the field out keeps the base's. data is known to be well-formed.
func emptyHostCPU(data []byte) error {
	var d struct {
		Host *struct {
			CPU *string `json:"cpu"`
		} `json:"host"`
	}
	if json.Unmarshal(data, &d) != nil || d.Host == nil || d.Host.CPU == nil || *d.Host.CPU != "" {
		return nil
	}
	return invalid.Field("host.cpu", "must be %q or %q (got \"\"); leave it out for the base system's CPU, or x86 without a base",
		topology.X86, topology.Grace)
}

// wireSpec is the file format: topology.Spec's fields, "base", and a "gpu" that may
// be a name. Its own GPU field shadows the embedded Spec's (encoding/json prefers
// the shallower field).
type wireSpec struct {
	Base string `json:"base"`
	*topology.Spec
	GPU gpuRef `json:"gpu"`
}

// gpuRef is a GPU given by catalog name or as an object merged over gpu.
type gpuRef struct{ gpu hardware.GPU }

func (r *gpuRef) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case string(data) == "null":
		return nil
	case len(data) > 0 && data[0] == '"':
		var name string
		if err := json.Unmarshal(data, &name); err != nil {
			return invalid.Field("gpu", "must be a GPU name or an object (%v)", err)
		}
		i, ok := gpuIndex[normalise(name)]
		if !ok {
			return &invalid.Error{Field: "gpu", Rule: unknownRule("GPU", name, gpuNames())}
		}
		r.gpu = cloneGPU(gpuTable[i].gpu)
		return nil
	case len(data) > 0 && data[0] == '{':
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r.gpu); err != nil {
			return decodeError(data, err, "gpu")
		}
		return foldPeakKeys(data, &r.gpu)
	}
	return invalid.Field("gpu", "must be a catalog GPU name or an object (got %s)", jsonKind(data))
}

// foldPeakKeys reads gpu.peak_tflops keys in any case ("BF16" as "bf16"), as the
// API does (wire.GPUFromProto), so that one cluster described in a file and in a
// request prices alike. A key given in upper case replaces the base GPU's entry of
// that type; two keys of the file naming one type are refused, since which one
// counts would be the map's choice. data is the GPU object, known to decode.
func foldPeakKeys(data []byte, g *hardware.GPU) error {
	var given struct {
		Peak map[string]json.RawMessage `json:"peak_tflops"`
	}
	if json.Unmarshal(data, &given) != nil || len(given.Peak) == 0 {
		return nil
	}
	keys := slices.Collect(maps.Keys(given.Peak))
	if a, b, dup := hardware.SameTypeKeys(keys); dup {
		return invalid.Field("gpu.peak_tflops", "%q and %q name one type: give it once", a, b)
	}
	for _, k := range keys {
		if lk := strings.ToLower(k); k != lk {
			g.PeakTFLOPS[hardware.DType(lk)] = g.PeakTFLOPS[hardware.DType(k)]
			delete(g.PeakTFLOPS, hardware.DType(k))
		}
	}
	return nil
}

var gpuRefType = reflect.TypeFor[gpuRef]()

// decodeError turns an encoding/json error into one naming the field.
func decodeError(data []byte, err error, prefix string) error {
	var typeErr *json.UnmarshalTypeError
	var synErr *json.SyntaxError
	var fieldErr *invalid.Error
	switch {
	case errors.As(err, &fieldErr):
		return err
	case errors.As(err, &typeErr):
		// encoding/json names promoted fields through the embedded struct
		// ("Spec.nics.gbps"); the file format has no such level.
		field := joinPath(prefix, strings.TrimPrefix(typeErr.Field, "Spec."))
		if field == "" {
			field = "(document)"
		}
		return invalid.Field(field, "must be %s (got JSON %s)", describeType(typeErr.Type), typeErr.Value)
	case errors.As(err, &synErr):
		return syntaxError(data, synErr.Offset, synErr.Error())
	}
	field := prefix
	if field == "" {
		field = "(document)"
	}
	return &invalid.Error{Field: field, Rule: err.Error()}
}

func describeType(t reflect.Type) string {
	if t == nil {
		return "a valid value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a " + t.String()
}

// syntaxError reports malformed input at byte offset off.
func syntaxError(data []byte, off int64, msg string) error {
	off = min(max(off, 0), int64(len(data)))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(data[:off], '\n'))
	return fmt.Errorf("%w: line %d, column %d (byte offset %d): %s", ErrSyntax, line, col, off, msg)
}

func jsonKind(data []byte) string {
	if len(data) == 0 {
		return "nothing"
	}
	switch c := data[0]; {
	case c == '[':
		return "an array"
	case c == '{':
		return "an object"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	default:
		return "a number"
	}
}

func joinPath(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	}
	return prefix + "." + field
}

// scan walks the document's tokens before decoding and reports what encoding/json
// would not: keys that are unknown (with their full path) or repeated, a top level
// that is not an object, and data after it. It also finds "base", which has to be
// applied before the rest of the file whatever the key order.
func scan(data []byte) (base string, hasBase bool, err error) {
	// encoding/json would replace the bad bytes with U+FFFD and carry on; YAML
	// refuses them. A file must read the same either way.
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, n := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return "", false, syntaxError(data, int64(off), "the document is not valid UTF-8")
	}
	s := scanner{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	s.dec.UseNumber() // numbers stay text: range errors are the decoder's to report
	tok, err := s.dec.Token()
	if err == io.EOF {
		return "", false, fmt.Errorf("%w: the document is empty", ErrSyntax)
	}
	if err != nil {
		return "", false, s.fail(err)
	}
	if tok != json.Delim('{') {
		return "", false, fmt.Errorf("%w: the document must be an object of cluster fields (got %s)",
			ErrSyntax, tokenKind(tok))
	}
	if err := s.object(reflect.TypeFor[wireSpec](), ""); err != nil {
		return "", false, err
	}
	end := s.dec.InputOffset()
	if _, err := s.dec.Token(); err != io.EOF {
		for end < int64(len(data)) && strings.IndexByte(" \t\r\n", data[end]) >= 0 {
			end++
		}
		return "", false, syntaxError(data, end, "unexpected data after the cluster description")
	}
	return s.base, s.hasBase, nil
}

type scanner struct {
	data    []byte
	dec     *json.Decoder
	base    string
	hasBase bool
}

func (s *scanner) token() (json.Token, error) {
	tok, err := s.dec.Token()
	if err != nil {
		return nil, s.fail(err)
	}
	return tok, nil
}

// fail reports a tokenizer error with its position.
func (s *scanner) fail(err error) error {
	var synErr *json.SyntaxError
	switch {
	case errors.As(err, &synErr):
		return syntaxError(s.data, synErr.Offset, synErr.Error())
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return syntaxError(s.data, int64(len(s.data)), "unexpected end of input")
	}
	return syntaxError(s.data, s.dec.InputOffset(), err.Error())
}

// value checks the next value, expected to decode into t (nil: not checked).
func (s *scanner) value(t reflect.Type, path string) error {
	tok, err := s.token()
	if err != nil {
		return err
	}
	return s.valueFrom(tok, t, path)
}

func (s *scanner) valueFrom(tok json.Token, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == gpuRefType {
		t = reflect.TypeFor[hardware.GPU]()
	}
	switch tok {
	case json.Delim('{'):
		if t != nil && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map) {
			return s.object(t, path)
		}
	case json.Delim('['):
		if t != nil && t.Kind() == reflect.Slice {
			for s.dec.More() {
				if err := s.value(t.Elem(), path); err != nil {
					return err
				}
			}
			_, err := s.token() // ']'
			return err
		}
	default:
		return nil // a scalar: its type is checked by the decoder
	}
	return s.skip(tok) // a container where none belongs: the decoder reports the type
}

// object checks the members of an object that decodes into t (a struct or a map);
// the opening '{' has been read.
func (s *scanner) object(t reflect.Type, path string) error {
	var names []string
	var types map[string]reflect.Type
	if t.Kind() == reflect.Struct {
		names, types = jsonFields(t)
	}
	seen := make(map[string]bool)
	for s.dec.More() {
		tok, err := s.token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		field := joinPath(path, key)
		if seen[key] {
			return invalid.Field(field, "is given more than once")
		}
		seen[key] = true
		var ft reflect.Type
		if t.Kind() == reflect.Map {
			ft = t.Elem()
		} else if ft = types[key]; ft == nil {
			return unknownField(field, key, path, names)
		}
		if path == "" && key == "base" {
			tok, err := s.token()
			if err != nil {
				return err
			}
			s.base, s.hasBase = tok.(string)
			if err := s.valueFrom(tok, ft, field); err != nil {
				return err
			}
			continue
		}
		if err := s.value(ft, field); err != nil {
			return err
		}
	}
	_, err := s.token() // '}'
	return err
}

func unknownField(field, key, path string, known []string) error {
	where := "a cluster description"
	if path != "" {
		where = path
	}
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return invalid.Field(field, "unknown field; did you mean %q? (keys are case-sensitive)", k)
		}
	}
	return invalid.Field(field, "unknown field; %s takes %s", where, strings.Join(known, ", "))
}

// skip consumes the rest of a value whose first token is tok.
func (s *scanner) skip(tok json.Token) error {
	depth := 0
	for {
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
		var err error
		if tok, err = s.token(); err != nil {
			return err
		}
	}
}

// jsonFields lists the JSON keys of struct t in declaration order with their types,
// the way encoding/json sees them: fields of untagged embedded structs are promoted
// unless a shallower field has the same key.
func jsonFields(t reflect.Type) ([]string, map[string]reflect.Type) {
	var names []string
	types := make(map[string]reflect.Type)
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				embedded = append(embedded, et)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
		types[name] = f.Type
	}
	for _, et := range embedded {
		sub, subTypes := jsonFields(et)
		for _, name := range sub {
			if _, dup := types[name]; dup {
				if i := slices.Index(names, name); i >= 0 {
					// keep the shallower type, but list the key in the embedded
					// struct's order so messages read like topology.Spec
					names = slices.Delete(names, i, i+1)
				}
				names = append(names, name)
				continue
			}
			names = append(names, name)
			types[name] = subTypes[name]
		}
	}
	return names, types
}

func tokenKind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}
