// Command openapigen is a protoc plugin, run by scripts/buf generate (buf.gen.yaml),
// that writes the OpenAPI 3.0 document of the REST gateway (server/openapi).
//
// The document describes the JSON the gateway sends and accepts, which is protojson
// with proto field names (the gateway's marshaler sets UseProtoNames):
//
//   - every field under its proto name (seq_len, not seqLen);
//   - enums as their value names, 64-bit integers as decimal strings (read as
//     strings or numbers), bytes as base64, well-known types (Timestamp, Duration, wrappers, Struct, Any, …) in
//     their protojson forms;
//   - one path per rule of the google.api.Service HTTP rules file, with the whole
//     request as the body (body "*"), its only field (body "field", a message),
//     or, for a request without fields, no body;
//   - a method answering a google.api.HttpBody as its raw body, of the media type
//     the info file's http_bodies gives it (the pictures' image/svg+xml);
//   - errors as the google.rpc.Status the gateway writes;
//   - every description from the comments of the .proto.
//
// Options (buf.gen.yaml opt, comma separated):
//
//	http_rules=FILE  the google.api.Service YAML with the HTTP rules (required)
//	info=FILE        YAML with the document's info (title, version, description),
//	                 servers, bearer_auth (an optional bearer token) and
//	                 http_bodies (the media type of each method answering a
//	                 google.api.HttpBody)
//	out=NAME         the file to write (default openapi.json)
//
// HTTP rules this plugin cannot describe faithfully (path or query parameters,
// response_body, additional bindings) are refused rather than approximated.
package main

import (
	"flag"
	"fmt"
	"os"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/types/pluginpb"
	"sigs.k8s.io/yaml"
)

func main() {
	var flags flag.FlagSet
	rulesFile := flags.String("http_rules", "", "google.api.Service YAML with the HTTP rules")
	infoFile := flags.String("info", "", "YAML with the document's info (title, version, description)")
	out := flags.String("out", "openapi.json", "name of the generated file")
	protogen.Options{ParamFunc: flags.Set}.Run(func(p *protogen.Plugin) error {
		p.SupportedFeatures = uint64(pluginpb.CodeGeneratorResponse_FEATURE_PROTO3_OPTIONAL)
		if *rulesFile == "" {
			return fmt.Errorf("openapigen: option http_rules=FILE is required")
		}
		var cfg config
		if err := readYAML(*rulesFile, &cfg.service); err != nil {
			return err
		}
		if *infoFile != "" {
			var i struct {
				Info       info        `json:"info"`
				Servers    []server    `json:"servers"`
				BearerAuth *bearerAuth `json:"bearer_auth"`
				HTTPBodies []httpBody  `json:"http_bodies"`
			}
			if err := readYAML(*infoFile, &i); err != nil {
				return err
			}
			cfg.info, cfg.servers, cfg.bearer, cfg.bodies = i.Info, i.Servers, i.BearerAuth, i.HTTPBodies
		}
		doc, err := generate(p, cfg)
		if err != nil {
			return fmt.Errorf("openapigen: %w", err)
		}
		f := p.NewGeneratedFile(*out, "")
		_, err = f.Write(doc)
		return err
	})
}

// readYAML decodes a YAML file strictly: a key this plugin does not know is an
// error, not something silently left out of the document.
func readYAML(name string, v any) error {
	data, err := os.ReadFile(name)
	if err != nil {
		return fmt.Errorf("openapigen: %w", err)
	}
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		return fmt.Errorf("openapigen: %s: %w", name, err)
	}
	return nil
}

// config is what the plugin reads besides the protos.
type config struct {
	service apiService
	info    info
	servers []server
	bearer  *bearerAuth
	bodies  []httpBody
}

// bearerAuth says the API takes an optional bearer token.
type bearerAuth struct {
	Description string `json:"description"`
}

// httpBody is the answer of a method that returns a google.api.HttpBody: the
// gateway writes its data as the response body, of its own media type, which the
// proto cannot declare.
type httpBody struct {
	Method       string `json:"method"` // the method's full name
	ResponseType string `json:"response_type"`
	Description  string `json:"description"`
}

// apiService is the part of a google.api.Service file that holds HTTP rules.
type apiService struct {
	Type          string `json:"type"`
	ConfigVersion int    `json:"config_version"`
	HTTP          struct {
		Rules []httpRule `json:"rules"`
	} `json:"http"`
}

// httpRule is a google.api.HttpRule.
type httpRule struct {
	Selector           string     `json:"selector"`
	Get                string     `json:"get"`
	Put                string     `json:"put"`
	Post               string     `json:"post"`
	Delete             string     `json:"delete"`
	Patch              string     `json:"patch"`
	Body               string     `json:"body"`
	ResponseBody       string     `json:"response_body"`
	AdditionalBindings []httpRule `json:"additional_bindings"`
}

// info is the OpenAPI info object.
type info struct {
	Title       string `json:"title"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
}
