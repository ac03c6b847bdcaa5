// Package openapi holds the OpenAPI 3 description of the REST gateway, generated
// from proto/stepcost/v1 by internal/openapigen (scripts/buf generate): proto field
// names and protojson types, as the gateway sends and accepts them, and the
// descriptions of the .proto comments.
package openapi

import _ "embed"

// Spec is the JSON of the OpenAPI 3 document, to be served as application/json.
// Callers must not modify it.
//
//go:embed stepcost.openapi.json
var Spec []byte
