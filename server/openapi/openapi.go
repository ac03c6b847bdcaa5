// Package openapi holds the OpenAPI (Swagger 2.0) description of the REST gateway,
// generated from proto/stepcost/v1 by protoc-gen-openapiv2 (scripts/buf generate).
package openapi

import _ "embed"

// Spec is the JSON of the OpenAPI v2 spec, to be served as application/json.
// Callers must not modify it.
//
//go:embed stepcost.swagger.json
var Spec []byte
