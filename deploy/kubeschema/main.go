// Command kubeschema turns the Kubernetes OpenAPI v2 document (api/openapi-spec/swagger.json
// in the k8s.io/kubernetes module) into one JSON schema per resource kind, laid out the way
// kubeconform looks schemas up in a local -schema-location:
//
//	OUT/v1.36.3-standalone-strict/deployment-apps-v1.json
//	OUT/v1.36.3-standalone/deployment-apps-v1.json
//
// It lets deploy/check validate the manifests offline. The conversion follows the one that
// produces kubeconform's published schemas (openapi2jsonschema --kubernetes --expanded
// --stand-alone [--strict]):
//
//   - IntOrString becomes oneOf string/integer, Quantity oneOf string/number (kubectl and most
//     tools accept a number for a quantity);
//   - the kind and apiVersion properties of a top-level kind get an enum of their
//     x-kubernetes-group-version-kind values;
//   - in the strict variant every object schema that lists properties rejects other ones
//     (additionalProperties: false), as the API server does for typed fields.
//
// Each file is self-contained: it carries the definitions it reaches under "definitions" and
// refers to them with "#/definitions/NAME", which also keeps recursive types finite.
// Descriptions and x-kubernetes-* annotations are dropped; they do not affect validation.
//
// It uses the standard library only.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	spec := flag.String("spec", "", "path of the Kubernetes OpenAPI v2 document (swagger.json)")
	out := flag.String("out", "", "directory to write the schema folders into")
	version := flag.String("version", "", `Kubernetes version the document belongs to, such as "v1.36.3"`)
	flag.Parse()
	if err := run(*spec, *out, *version, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kubeschema:", err)
		os.Exit(1)
	}
}

func run(specPath, out, version string, log io.Writer) error {
	if specPath == "" || out == "" || version == "" {
		return errors.New("-spec, -out and -version are required")
	}
	if !strings.HasPrefix(version, "v") && version != "master" {
		version = "v" + version
	}
	raw, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	for _, strict := range []bool{false, true} {
		files, err := convert(raw, strict)
		if err != nil {
			return fmt.Errorf("%s: %w", specPath, err)
		}
		dir := filepath.Join(out, version+"-standalone")
		if strict {
			dir += "-strict"
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		names := make([]string, 0, len(files))
		for name := range files {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
				return err
			}
		}
		fmt.Fprintf(log, "kubeschema: %d schemas in %s\n", len(files), dir)
	}
	return nil
}

// gvk is one entry of a definition's x-kubernetes-group-version-kind list.
type gvk struct{ Group, Version, Kind string }

func (g gvk) apiVersion() string {
	if g.Group == "" {
		return g.Version
	}
	return g.Group + "/" + g.Version
}

// fileName is the name kubeconform derives from a resource's kind and apiVersion:
// lower(kind), then "-" + the group's first DNS label (if any), then "-" + version.
func (g gvk) fileName() string {
	name := strings.ToLower(g.Kind)
	if g.Group != "" {
		name += "-" + strings.ToLower(strings.SplitN(g.Group, ".", 2)[0])
	}
	return name + "-" + strings.ToLower(g.Version) + ".json"
}

const refPrefix = "#/definitions/"

// convert returns the schema files (name → JSON) for every kind in an OpenAPI v2 document.
func convert(raw []byte, strict bool) (map[string][]byte, error) {
	var doc struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := decode(raw, &doc); err != nil {
		return nil, err
	}
	if len(doc.Definitions) == 0 {
		return nil, errors.New("no definitions: not an OpenAPI v2 document")
	}
	defs := doc.Definitions
	if _, ok := defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]; ok {
		defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = oneOf("string", "integer")
	}
	if _, ok := defs["io.k8s.apimachinery.pkg.api.resource.Quantity"]; ok {
		defs["io.k8s.apimachinery.pkg.api.resource.Quantity"] = oneOf("string", "number")
	}

	kinds := map[string][]gvk{} // definition name → the kinds it serves
	for name, def := range defs {
		list, err := gvks(def)
		if err != nil {
			return nil, fmt.Errorf("definition %s: %w", name, err)
		}
		if len(list) > 0 {
			kinds[name] = list
			addEnums(def, list)
		}
		walk(def, func(s map[string]any) { clean(s, strict) })
	}

	files := map[string][]byte{}
	owner := map[string]string{} // file name → definition that wrote it
	names := make([]string, 0, len(kinds))
	for name := range kinds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		root := map[string]any{}
		for k, v := range defs[name] {
			root[k] = v
		}
		root["$schema"] = "http://json-schema.org/draft-04/schema#"
		if _, ok := root["type"]; !ok {
			root["type"] = "object"
		}
		if strict {
			root["additionalProperties"] = false
		}
		closure, err := reachable(defs, name)
		if err != nil {
			return nil, err
		}
		if len(closure) > 0 {
			root["definitions"] = closure
		}
		data, err := json.Marshal(root)
		if err != nil {
			return nil, fmt.Errorf("definition %s: %w", name, err)
		}
		for _, g := range kinds[name] {
			file := g.fileName()
			if prev, dup := owner[file]; dup && prev != name {
				// Two definitions claim the same kind and apiVersion; keep the first in
				// name order, so the output does not depend on map iteration.
				continue
			}
			owner[file] = name
			files[file] = data
		}
	}
	return files, nil
}

func decode(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep integers (minimum, maximum, defaults) exact
	return dec.Decode(v)
}

func oneOf(types ...string) map[string]any {
	alts := make([]any, len(types))
	for i, t := range types {
		alts[i] = map[string]any{"type": t}
	}
	return map[string]any{"oneOf": alts}
}

func gvks(def map[string]any) ([]gvk, error) {
	ext, ok := def["x-kubernetes-group-version-kind"]
	if !ok {
		return nil, nil
	}
	items, ok := ext.([]any)
	if !ok {
		return nil, errors.New("x-kubernetes-group-version-kind is not a list")
	}
	var out []gvk
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, errors.New("x-kubernetes-group-version-kind entry is not an object")
		}
		g, _ := m["group"].(string)
		v, _ := m["version"].(string)
		k, _ := m["kind"].(string)
		if v == "" || k == "" {
			return nil, fmt.Errorf("x-kubernetes-group-version-kind entry without version or kind: %v", m)
		}
		out = append(out, gvk{g, v, k})
	}
	return out, nil
}

// addEnums restricts the kind and apiVersion properties of a top-level kind.
func addEnums(def map[string]any, list []gvk) {
	props, _ := def["properties"].(map[string]any)
	set := func(prop string, values []string) {
		p, ok := props[prop].(map[string]any)
		if !ok {
			return
		}
		seen := map[string]bool{}
		var enum []any
		for _, v := range values {
			if !seen[v] {
				seen[v] = true
				enum = append(enum, v)
			}
		}
		p["enum"] = enum
	}
	var kinds, versions []string
	for _, g := range list {
		kinds = append(kinds, g.Kind)
		versions = append(versions, g.apiVersion())
	}
	set("kind", kinds)
	set("apiVersion", versions)
}

// clean edits one schema node in place.
func clean(s map[string]any, strict bool) {
	delete(s, "description")
	for k := range s {
		if strings.HasPrefix(k, "x-kubernetes-") {
			delete(s, k)
		}
	}
	if s["format"] == "int-or-string" {
		for k := range s {
			delete(s, k)
		}
		s["oneOf"] = oneOf("string", "integer")["oneOf"]
		return
	}
	if _, hasProps := s["properties"]; hasProps && strict {
		if _, set := s["additionalProperties"]; !set {
			s["additionalProperties"] = false
		}
	}
}

// walk calls f on a schema and every schema nested in it (not following $ref). Children are
// collected before f runs, so f may rewrite the node.
func walk(s map[string]any, f func(map[string]any)) {
	var kids []map[string]any
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			if m, ok := p.(map[string]any); ok {
				kids = append(kids, m)
			}
		}
	}
	for _, key := range []string{"items", "additionalProperties", "not"} {
		if m, ok := s[key].(map[string]any); ok {
			kids = append(kids, m)
		}
	}
	for _, key := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := s[key].([]any); ok {
			for _, it := range list {
				if m, ok := it.(map[string]any); ok {
					kids = append(kids, m)
				}
			}
		}
	}
	f(s)
	for _, k := range kids {
		walk(k, f)
	}
}

// reachable returns the definitions that the named one refers to, directly or not (itself
// too if it is recursive).
func reachable(defs map[string]map[string]any, name string) (map[string]any, error) {
	out := map[string]any{}
	var visit func(s map[string]any) error
	visit = func(s map[string]any) error {
		var err error
		walk(s, func(n map[string]any) {
			ref, ok := n["$ref"].(string)
			if !ok || err != nil {
				return
			}
			target, found := strings.CutPrefix(ref, refPrefix)
			if !found {
				err = fmt.Errorf("unsupported $ref %q", ref)
				return
			}
			if _, done := out[target]; done {
				return
			}
			def, ok := defs[target]
			if !ok {
				err = fmt.Errorf("dangling $ref %q", ref)
				return
			}
			out[target] = def
			err = visit(def)
		})
		return err
	}
	if err := visit(defs[name]); err != nil {
		return nil, fmt.Errorf("definition %s: %w", name, err)
	}
	return out, nil
}
