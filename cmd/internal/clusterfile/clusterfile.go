// Package clusterfile reads cluster description files (docs/cluster-file.md) in JSON
// or YAML. YAML is converted to JSON and both go through catalog.DecodeSpec, so the
// same strict rules apply to either: unknown or repeated keys, wrong types and
// invalid values are errors that name the field.
package clusterfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/topology"
)

// MaxSize is the largest cluster file accepted, in bytes (1 MiB). Real files are a
// few hundred bytes; the limit keeps a wrong path (a log, a checkpoint) from being
// read into memory.
const MaxSize = 1 << 20

// ErrTooLarge is wrapped by the error for a file over MaxSize.
var ErrTooLarge = errors.New("cluster file is larger than 1 MiB")

// Load reads and decodes the cluster file at path.
func Load(path string) (topology.Spec, error) {
	f, err := os.Open(path)
	if err != nil {
		return topology.Spec{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return topology.Spec{}, fmt.Errorf("%s: %w", path, err)
	}
	return Parse(data, path)
}

// Parse decodes a cluster file's content. name (a path or "-") is used in error
// messages and to choose the format: ".yaml" and ".yml" are YAML, ".json" is JSON,
// and anything else is JSON if the content starts with '{' and YAML otherwise. A YAML
// file whose content is valid JSON is read as JSON: YAML 1.2 means to be a superset of
// JSON, but YAML parsers refuse characters JSON allows in strings (DEL, the C1
// controls), and such a file should read the same whatever its name says.
func Parse(data []byte, name string) (topology.Spec, error) {
	if len(data) > MaxSize {
		return topology.Spec{}, fmt.Errorf("%s: %w", name, ErrTooLarge)
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	if isYAML(data, name) && !json.Valid(data) {
		j, err := yamlToJSON(data)
		if invalid.Is(err) {
			return topology.Spec{}, fmt.Errorf("%s: %w", name, err)
		}
		if err != nil {
			return topology.Spec{}, fmt.Errorf("%s: invalid YAML: %w", name, err)
		}
		data = j
	}
	spec, err := catalog.DecodeSpec(data)
	if err == nil {
		err = checkAlgorithms(spec)
	}
	if err != nil {
		return topology.Spec{}, fmt.Errorf("%s: %w", name, err)
	}
	return spec, nil
}

// checkAlgorithms checks the names of the measured algorithm ranges
// (topology.AlgoRange; their numbers are checked by the spec).
func checkAlgorithms(spec topology.Spec) error { return collective.CheckRanges(spec.Algorithms) }

func isYAML(data []byte, name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml":
		return true
	case ".json":
		return false
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	return len(trimmed) == 0 || trimmed[0] != '{'
}

// yamlToJSON converts a single YAML document to JSON, rejecting repeated keys and
// further documents (the YAML counterpart of trailing data after a JSON object).
func yamlToJSON(data []byte) ([]byte, error) {
	dec := yamlv2.NewDecoder(bytes.NewReader(data))
	var doc any
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		return nil, oneLine(err)
	}
	if field, v, ok := nonFinite(doc, ""); ok {
		return nil, invalid.Field(field, "must be a finite number (got %v)", v)
	}
	var next any
	if err := dec.Decode(&next); err != io.EOF {
		if err != nil {
			return nil, oneLine(err)
		}
		return nil, errors.New("the file holds more than one YAML document")
	}
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, oneLine(err)
	}
	return j, nil
}

// oneLine folds yaml.v2's multi-line error lists ("unmarshal errors:\n  line 3: …").
func oneLine(err error) error {
	return errors.New(strings.Join(strings.Fields(err.Error()), " "))
}

// nonFinite finds a .nan or .inf in a decoded YAML document (JSON cannot carry
// them) and returns its field path.
func nonFinite(v any, path string) (string, float64, bool) {
	switch v := v.(type) {
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return path, v, true
		}
	case []any:
		for _, e := range v {
			if p, f, ok := nonFinite(e, path); ok {
				return p, f, true
			}
		}
	case map[any]any:
		keys := make([]string, 0, len(v))
		byKey := make(map[string]any, len(v))
		for k, e := range v {
			ks := fmt.Sprint(k)
			keys = append(keys, ks)
			byKey[ks] = e
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if p, f, ok := nonFinite(byKey[k], p); ok {
				return p, f, true
			}
		}
	}
	return "", 0, false
}
