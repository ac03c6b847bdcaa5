package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

// A miniature OpenAPI v2 document with the shapes that matter: core and named groups, one
// definition serving two kinds, IntOrString and Quantity, and a recursive type.
const spec = `{
  "definitions": {
    "io.k8s.api.apps.v1.Deployment": {
      "description": "Deployment enables declarative updates.",
      "type": "object",
      "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "spec": {"$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentSpec", "description": "spec"}
      },
      "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "Deployment", "version": "v1"}]
    },
    "io.k8s.api.apps.v1.DeploymentSpec": {
      "type": "object",
      "required": ["selector"],
      "properties": {
        "replicas": {"type": "integer", "format": "int32"},
        "maxSurge": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
        "memory": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "selector": {"type": "string"},
        "port": {"type": "string", "format": "int-or-string"}
      },
      "x-kubernetes-map-type": "atomic"
    },
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
    "io.k8s.api.core.v1.Tree": {
      "type": "object",
      "properties": {
        "kind": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#/definitions/io.k8s.api.core.v1.Node"}}
      },
      "x-kubernetes-group-version-kind": [
        {"group": "", "kind": "Tree", "version": "v1"},
        {"group": "networking.k8s.io", "kind": "Tree", "version": "v1beta1"}
      ]
    },
    "io.k8s.api.core.v1.Node": {
      "type": "object",
      "properties": {"children": {"type": "array", "items": {"$ref": "#/definitions/io.k8s.api.core.v1.Node"}}}
    },
    "io.k8s.api.core.v1.Unused": {"type": "object", "properties": {"x": {"type": "string"}}}
  }
}`

func schemas(t *testing.T, strict bool) map[string]map[string]any {
	t.Helper()
	files, err := convert([]byte(spec), strict)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for name, data := range files {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = m
	}
	return out
}

func TestFileNames(t *testing.T) {
	got := []string{}
	for name := range schemas(t, true) {
		got = append(got, name)
	}
	sort.Strings(got)
	// kubeconform: lower(kind) + "-" + first label of the group (none for core) + "-" + version.
	want := []string{"deployment-apps-v1.json", "tree-networking-v1beta1.json", "tree-v1.json"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("files = %v, want %v", got, want)
	}
}

func TestStrict(t *testing.T) {
	for _, strict := range []bool{false, true} {
		d := schemas(t, strict)["deployment-apps-v1.json"]
		spec := d["definitions"].(map[string]any)["io.k8s.api.apps.v1.DeploymentSpec"].(map[string]any)
		labels := spec["properties"].(map[string]any)["labels"].(map[string]any)
		_, rootClosed := d["additionalProperties"]
		_, specClosed := spec["additionalProperties"]
		if rootClosed != strict || specClosed != strict {
			t.Errorf("strict=%v: additionalProperties on root %v, on nested object %v", strict, rootClosed, specClosed)
		}
		// A map keeps its own additionalProperties schema.
		if _, ok := labels["additionalProperties"].(map[string]any); !ok {
			t.Errorf("strict=%v: map additionalProperties = %v", strict, labels["additionalProperties"])
		}
	}
}

func TestRewrites(t *testing.T) {
	d := schemas(t, true)["deployment-apps-v1.json"]
	if d["$schema"] != "http://json-schema.org/draft-04/schema#" {
		t.Errorf("$schema = %v", d["$schema"])
	}
	if _, ok := d["description"]; ok {
		t.Error("description kept")
	}
	defs := d["definitions"].(map[string]any)
	names := []string{}
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	want := []string{
		"io.k8s.api.apps.v1.DeploymentSpec",
		"io.k8s.apimachinery.pkg.api.resource.Quantity",
		"io.k8s.apimachinery.pkg.util.intstr.IntOrString",
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("definitions = %v, want only the reachable %v", names, want)
	}
	oneOf := func(types ...string) any {
		var alts []any
		for _, t := range types {
			alts = append(alts, map[string]any{"type": t})
		}
		return map[string]any{"oneOf": alts}
	}
	if got := defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]; !reflect.DeepEqual(got, oneOf("string", "integer")) {
		t.Errorf("IntOrString = %v", got)
	}
	if got := defs["io.k8s.apimachinery.pkg.api.resource.Quantity"]; !reflect.DeepEqual(got, oneOf("string", "number")) {
		t.Errorf("Quantity = %v", got)
	}
	spec := defs["io.k8s.api.apps.v1.DeploymentSpec"].(map[string]any)
	if _, ok := spec["x-kubernetes-map-type"]; ok {
		t.Error("x-kubernetes-* annotation kept")
	}
	if got := spec["properties"].(map[string]any)["port"]; !reflect.DeepEqual(got, oneOf("string", "integer")) {
		t.Errorf("inline int-or-string = %v", got)
	}
	props := d["properties"].(map[string]any)
	if got := props["kind"].(map[string]any)["enum"]; !reflect.DeepEqual(got, []any{"Deployment"}) {
		t.Errorf("kind enum = %v", got)
	}
	if got := props["apiVersion"].(map[string]any)["enum"]; !reflect.DeepEqual(got, []any{"apps/v1"}) {
		t.Errorf("apiVersion enum = %v", got)
	}
}

func TestRecursiveAndShared(t *testing.T) {
	all := schemas(t, true)
	core, beta := all["tree-v1.json"], all["tree-networking-v1beta1.json"]
	if !reflect.DeepEqual(core, beta) {
		t.Error("one definition serving two kinds gave two different schemas")
	}
	defs := core["definitions"].(map[string]any)
	if _, ok := defs["io.k8s.api.core.v1.Node"]; !ok || len(defs) != 1 {
		t.Errorf("definitions = %v, want the recursive Node only", defs)
	}
	// Same kind in two groups: one enum entry, both apiVersions.
	props := core["properties"].(map[string]any)
	if got := props["kind"].(map[string]any)["enum"]; !reflect.DeepEqual(got, []any{"Tree"}) {
		t.Errorf("kind enum = %v", got)
	}
}

func TestErrors(t *testing.T) {
	for name, doc := range map[string]string{
		"not JSON":       `{`,
		"no definitions": `{"swagger": "2.0"}`,
		"dangling ref":   `{"definitions": {"a.B": {"properties": {"x": {"$ref": "#/definitions/nope"}}, "x-kubernetes-group-version-kind": [{"group": "", "kind": "B", "version": "v1"}]}}}`,
		"remote ref":     `{"definitions": {"a.B": {"properties": {"x": {"$ref": "other.json#/x"}}, "x-kubernetes-group-version-kind": [{"group": "", "kind": "B", "version": "v1"}]}}}`,
		"bad gvk":        `{"definitions": {"a.B": {"x-kubernetes-group-version-kind": [{"group": "g"}]}}}`,
	} {
		if _, err := convert([]byte(doc), true); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestRunLayout(t *testing.T) {
	dir := t.TempDir()
	specPath := filepath.Join(dir, "swagger.json")
	if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "schemas")
	if err := run(specPath, out, "1.36.3", io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"v1.36.3-standalone-strict/deployment-apps-v1.json",
		"v1.36.3-standalone/deployment-apps-v1.json",
	} {
		if _, err := os.Stat(filepath.Join(out, p)); err != nil {
			t.Error(err)
		}
	}
	if err := run(specPath, out, "", io.Discard); err == nil {
		t.Error("missing -version accepted")
	}
}
