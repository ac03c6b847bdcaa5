package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The names of the error schemas, which the protos do not define.
const (
	statusSchema = "Status"
	anySchema    = "Any"
)

const jsonType = "application/json"

// generate returns the OpenAPI document of the methods of p's files that have an
// HTTP rule.
func generate(p *protogen.Plugin, cfg config) ([]byte, error) {
	if cfg.info.Title == "" || cfg.info.Version == "" {
		return nil, fmt.Errorf("the document needs info.title and info.version (option info=FILE)")
	}
	rules := map[string]httpRule{}
	for _, r := range cfg.service.HTTP.Rules {
		if _, dup := rules[r.Selector]; dup {
			return nil, fmt.Errorf("two HTTP rules for %s", r.Selector)
		}
		rules[r.Selector] = r
	}
	g := &generator{schemas: map[string]*schema{}, names: map[string]protoreflect.FullName{}}
	doc := document{OpenAPI: "3.0.3", Info: cfg.info}
	used := map[string]bool{}
	bodies := map[string]httpBody{}
	for _, b := range cfg.bodies {
		if b.Method == "" || b.ResponseType == "" || b.Description == "" {
			return nil, fmt.Errorf("http_bodies: method, response_type and description are all required")
		}
		bodies[b.Method] = b
	}
	usedBody := map[string]bool{}
	for _, f := range p.Files {
		if !f.Generate {
			continue
		}
		for _, s := range f.Services {
			var tagged bool
			for _, m := range s.Methods {
				rule, ok := rules[string(m.Desc.FullName())]
				if !ok {
					continue // no REST binding
				}
				used[rule.Selector] = true
				var body *httpBody
				if m.Output.Desc.FullName() == httpBodyMessage {
					b, ok := bodies[string(m.Desc.FullName())]
					if !ok {
						return nil, fmt.Errorf("%s answers a google.api.HttpBody: give its media type in http_bodies", m.Desc.FullName())
					}
					body, usedBody[b.Method] = &b, true
				}
				path, item, err := g.operation(s, m, rule, body)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", m.Desc.FullName(), err)
				}
				if i := slices.IndexFunc(doc.Paths, func(e entry[pathItem]) bool { return e.key == path }); i >= 0 {
					for _, op := range item {
						if slices.ContainsFunc(doc.Paths[i].value, func(e entry[*operation]) bool { return e.key == op.key }) {
							return nil, fmt.Errorf("%s: %s %s is bound twice", m.Desc.FullName(), op.key, path)
						}
						doc.Paths[i].value = append(doc.Paths[i].value, op)
					}
				} else {
					doc.Paths = append(doc.Paths, entry[pathItem]{path, item})
				}
				tagged = true
			}
			if tagged {
				doc.Tags = append(doc.Tags, tag{Name: string(s.Desc.Name()), Description: text(s.Comments.Leading)})
			}
		}
	}
	for _, r := range cfg.service.HTTP.Rules {
		if !used[r.Selector] {
			return nil, fmt.Errorf("HTTP rule for %s: no such method in the files generated", r.Selector)
		}
	}
	for _, b := range cfg.bodies {
		if !usedBody[b.Method] {
			return nil, fmt.Errorf("http_bodies: %s is no method answering a google.api.HttpBody with an HTTP rule", b.Method)
		}
	}
	doc.Servers = cfg.servers
	if b := cfg.bearer; b != nil {
		// The token is optional (the daemon asks for one only when started with a
		// token file): the empty requirement says a call may go without it.
		doc.Security = []map[string][]string{{}, {bearerScheme: {}}}
		doc.Components.SecuritySchemes = map[string]securityScheme{bearerScheme: {Type: "http", Scheme: "bearer", Description: b.Description}}
	}
	if len(doc.Paths) == 0 {
		return nil, fmt.Errorf("no method has an HTTP rule")
	}
	g.errorSchemas()
	names := make([]string, 0, len(g.schemas))
	for n := range g.schemas {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		doc.Components.Schemas = append(doc.Components.Schemas, entry[*schema]{n, g.schemas[n]})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type generator struct {
	schemas map[string]*schema               // components, by name
	names   map[string]protoreflect.FullName // which proto each component describes
}

// operation describes one method bound by rule.
func (g *generator) operation(s *protogen.Service, m *protogen.Method, rule httpRule, body *httpBody) (string, pathItem, error) {
	if len(rule.AdditionalBindings) > 0 {
		return "", nil, fmt.Errorf("additional_bindings are not supported")
	}
	if rule.ResponseBody != "" {
		return "", nil, fmt.Errorf("response_body is not supported: the whole response is the body")
	}
	var verb, path string
	for _, b := range []struct{ verb, path string }{{"get", rule.Get}, {"put", rule.Put}, {"post", rule.Post}, {"delete", rule.Delete}, {"patch", rule.Patch}} {
		if b.path == "" {
			continue
		}
		if verb != "" {
			return "", nil, fmt.Errorf("the rule has more than one method")
		}
		verb, path = b.verb, b.path
	}
	if verb == "" {
		return "", nil, fmt.Errorf("the rule has no method (get, put, post, delete or patch)")
	}
	if strings.ContainsAny(path, "{}") {
		return "", nil, fmt.Errorf("path parameters are not supported (%s)", path)
	}
	desc := text(m.Comments.Leading)
	op := &operation{
		OperationID: string(m.Desc.Name()),
		Summary:     firstSentence(desc),
		Description: desc,
		Tags:        []string{string(s.Desc.Name())},
	}
	in := m.Input.Desc
	switch rule.Body {
	case "*":
		op.RequestBody = &requestBody{
			Description: fmt.Sprintf("The %s, as JSON with proto field names. An unknown field is refused (400); an empty body is an empty request.", in.Name()),
			Content:     content(g.ref(m.Input)),
		}
	case "":
		if in.Fields().Len() > 0 {
			return "", nil, fmt.Errorf("%s has fields but no body: query parameters are not supported", in.FullName())
		}
	default:
		// One message field is the body; the request may have no other (they would
		// be query parameters).
		var body *protogen.Field
		for _, f := range m.Input.Fields {
			if string(f.Desc.Name()) == rule.Body {
				body = f
			}
		}
		if body == nil || body.Message == nil || body.Desc.IsList() || body.Desc.IsMap() || len(m.Input.Fields) != 1 {
			return "", nil, fmt.Errorf("body %q is not supported: use \"*\" (the whole request) or the request's only field, a message", rule.Body)
		}
		op.RequestBody = &requestBody{
			Description: fmt.Sprintf("The %s (field %s of %s), as JSON with proto field names. An unknown field is refused (400); an empty body is an empty request.",
				body.Message.Desc.Name(), rule.Body, in.Name()),
			Content: content(g.ref(body.Message)),
		}
	}
	ok := &response{Description: fmt.Sprintf("The %s.", m.Output.Desc.Name()), Content: content(g.ref(m.Output))}
	if body != nil {
		ok = &response{Description: body.Description, Content: map[string]mediaType{body.ResponseType: {Schema: &schema{Type: "string"}}}}
	}
	op.Responses = []entry[*response]{
		{"200", ok},
		{"default", errorResponse()},
	}
	return path, pathItem{{verb, op}}, nil
}

func content(s *schema) map[string]mediaType { return map[string]mediaType{jsonType: {Schema: s}} }

// httpBodyMessage is the message the gateway writes as a raw body.
const httpBodyMessage protoreflect.FullName = "google.api.HttpBody"

func componentRef(name string) string { return "#/components/schemas/" + name }

// ref returns a reference to m's schema, adding it (and what it refers to) to the
// components.
func (g *generator) ref(m *protogen.Message) *schema {
	name := g.componentName(m.Desc)
	if _, ok := g.schemas[name]; !ok {
		g.schemas[name] = nil // placeholder: recursive messages
		g.schemas[name] = g.message(m)
	}
	return &schema{Ref: componentRef(name)}
}

// enumRef returns a reference to e's schema, adding it to the components.
func (g *generator) enumRef(e *protogen.Enum) *schema {
	name := g.componentName(e.Desc)
	if _, ok := g.schemas[name]; !ok {
		g.schemas[name] = enumSchema(e)
	}
	return &schema{Ref: componentRef(name)}
}

// componentName is a proto's name without its package: the API is one package, and
// the error schemas keep names of their own.
func (g *generator) componentName(d protoreflect.Descriptor) string {
	full := d.FullName()
	name := strings.TrimPrefix(string(full), string(d.ParentFile().Package())+".")
	if prev, ok := g.names[name]; ok && prev != full {
		panic(fmt.Sprintf("openapigen: %s and %s would share the schema name %s", prev, full, name))
	}
	if name == statusSchema || name == anySchema {
		panic(fmt.Sprintf("openapigen: %s would take the name of the error schema %s", full, name))
	}
	g.names[name] = full
	return name
}

func (g *generator) message(m *protogen.Message) *schema {
	s := &schema{Type: "object", Description: text(m.Comments.Leading)}
	props := []entry[*schema]{}
	for _, f := range m.Fields {
		props = append(props, entry[*schema]{string(f.Desc.Name()), g.field(f)})
	}
	if len(props) > 0 {
		s.Properties = props
	}
	return s
}

// field is the schema of one field of a message: its JSON type and its description.
func (g *generator) field(f *protogen.Field) *schema {
	d := f.Desc
	desc := text(f.Comments.Leading)
	if desc == "" {
		desc = text(f.Comments.Trailing)
	}
	if o := f.Oneof; o != nil && !o.Desc.IsSynthetic() {
		var others []string
		for _, of := range o.Fields {
			others = append(others, string(of.Desc.Name()))
		}
		desc = join(desc, fmt.Sprintf("One of %s (oneof %s): set at most one.", strings.Join(others, ", "), o.Desc.Name()))
	}
	var s *schema
	switch {
	case d.IsMap():
		s = &schema{Type: "object", AdditionalProperties: g.single(f.Message.Fields[1])}
		desc = join(desc, "A JSON object: keys are "+mapKey(d.MapKey().Kind())+".")
	case d.IsList():
		s = &schema{Type: "array", Items: g.single(f)}
	default:
		s = g.single(f)
	}
	if note := int64Note(d.Kind()); note != "" {
		desc = join(desc, note)
	}
	if s.Ref != "" {
		// OpenAPI 3.0 ignores the siblings of a $ref: the description goes beside an allOf.
		s = &schema{AllOf: []*schema{s}}
	}
	s.Description = desc
	return s
}

func mapKey(k protoreflect.Kind) string {
	switch k {
	case protoreflect.BoolKind:
		return `"true" or "false"`
	case protoreflect.StringKind:
		return "strings"
	}
	return "integers written as decimal strings"
}

func int64Note(k protoreflect.Kind) string {
	switch k {
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return "A 64-bit integer: answers write it as a decimal string (JSON numbers lose precision past 2^53); requests may give a string or a number."
	}
	return ""
}

// int64Schema is a 64-bit integer as protojson reads it: a decimal string or a
// JSON number (it writes the string). Both forms are in the document so that a
// client generated from it may send 1024 as well as "1024".
func int64Schema(signed bool) *schema {
	if signed {
		return &schema{OneOf: []*schema{{Type: "string", Format: "int64", Pattern: `^-?[0-9]+$`}, {Type: "integer", Format: "int64"}}}
	}
	return &schema{OneOf: []*schema{{Type: "string", Format: "uint64", Pattern: `^[0-9]+$`}, {Type: "integer", Format: "int64", Minimum: ptr(0.0)}}}
}

// single is the schema of one value of f (an element of a list, the value of a map).
func (g *generator) single(f *protogen.Field) *schema {
	switch f.Desc.Kind() {
	case protoreflect.BoolKind:
		return &schema{Type: "boolean"}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return &schema{Type: "integer", Format: "int32"}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return &schema{Type: "integer", Format: "int64", Minimum: ptr(0.0), Maximum: ptr(float64(1<<32 - 1))}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return int64Schema(true)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return int64Schema(false)
	case protoreflect.FloatKind:
		return &schema{Type: "number", Format: "float"}
	case protoreflect.DoubleKind:
		return &schema{Type: "number", Format: "double"}
	case protoreflect.StringKind:
		return &schema{Type: "string"}
	case protoreflect.BytesKind:
		return &schema{Type: "string", Format: "byte"}
	case protoreflect.EnumKind:
		if f.Enum.Desc.FullName() == "google.protobuf.NullValue" {
			return &schema{Nullable: true, Enum: []any{nil}}
		}
		return g.enumRef(f.Enum)
	default: // message, group
		if s := wellKnown(f.Message.Desc.FullName()); s != nil {
			return s
		}
		return g.ref(f.Message)
	}
}

// wellKnown is the protojson form of a well-known type, or nil.
func wellKnown(name protoreflect.FullName) *schema {
	switch name {
	case "google.protobuf.Timestamp":
		return &schema{Type: "string", Format: "date-time"}
	case "google.protobuf.Duration":
		return &schema{Type: "string", Pattern: `^-?[0-9]+(\.[0-9]{1,9})?s$`}
	case "google.protobuf.FieldMask":
		return &schema{Type: "string"}
	case "google.protobuf.Struct":
		return &schema{Type: "object", AdditionalProperties: true}
	case "google.protobuf.Value":
		return &schema{Nullable: true}
	case "google.protobuf.ListValue":
		return &schema{Type: "array", Items: &schema{Nullable: true}}
	case "google.protobuf.Empty":
		return &schema{Type: "object"}
	case "google.protobuf.Any":
		return &schema{Ref: componentRef(anySchema)}
	case "google.protobuf.DoubleValue":
		return &schema{Type: "number", Format: "double"}
	case "google.protobuf.FloatValue":
		return &schema{Type: "number", Format: "float"}
	case "google.protobuf.Int64Value":
		return int64Schema(true)
	case "google.protobuf.UInt64Value":
		return int64Schema(false)
	case "google.protobuf.Int32Value":
		return &schema{Type: "integer", Format: "int32"}
	case "google.protobuf.UInt32Value":
		return &schema{Type: "integer", Format: "int64", Minimum: ptr(0.0), Maximum: ptr(float64(1<<32 - 1))}
	case "google.protobuf.BoolValue":
		return &schema{Type: "boolean"}
	case "google.protobuf.StringValue":
		return &schema{Type: "string"}
	case "google.protobuf.BytesValue":
		return &schema{Type: "string", Format: "byte"}
	}
	return nil
}

// enumSchema lists an enum's value names, which protojson writes, and says what
// each means.
func enumSchema(e *protogen.Enum) *schema {
	s := &schema{Type: "string"}
	var lines []string
	for _, v := range e.Values {
		s.Enum = append(s.Enum, string(v.Desc.Name()))
		line := "- `" + string(v.Desc.Name()) + "`"
		if d := text(v.Comments.Leading); d != "" {
			line += ": " + strings.ReplaceAll(d, "\n\n", " ")
		} else if v.Desc.Number() == 0 {
			line += ": unset (never sent; the default applies)"
		}
		lines = append(lines, line)
	}
	s.Description = join(text(e.Comments.Leading), "Values:\n"+strings.Join(lines, "\n"))
	return s
}

// errorSchemas adds google.rpc.Status and google.protobuf.Any as the gateway writes
// them (proto field names, details as protojson Any).
func (g *generator) errorSchemas() {
	g.schemas[statusSchema] = &schema{
		Type:        "object",
		Description: "google.rpc.Status: the error of a failed call, as the REST gateway writes it.",
		Properties: []entry[*schema]{
			{"code", &schema{Type: "integer", Format: "int32", Description: "The gRPC status code, a number: 1 CANCELED, 3 INVALID_ARGUMENT, 4 DEADLINE_EXCEEDED, 5 NOT_FOUND, 8 RESOURCE_EXHAUSTED, 12 UNIMPLEMENTED, 13 INTERNAL, 14 UNAVAILABLE, 16 UNAUTHENTICATED."}},
			{"message", &schema{Type: "string", Description: "What went wrong, in English, naming the field at fault when there is one."}},
			{"details", &schema{Type: "array", Items: &schema{Ref: componentRef(anySchema)},
				Description: "Structured details; a bad request carries a google.rpc.BadRequest listing every field at fault."}},
		},
	}
	g.schemas[anySchema] = &schema{
		Type: "object",
		Description: "google.protobuf.Any as protojson writes it: \"@type\" names the message and its fields follow under their proto names. " +
			"A google.rpc.BadRequest is {\"@type\": \"type.googleapis.com/google.rpc.BadRequest\", \"field_violations\": [{\"field\": \"training.seq_len\", \"description\": \"…\"}]}.",
		Properties: []entry[*schema]{
			{"@type", &schema{Type: "string", Description: "The type URL of the message, e.g. type.googleapis.com/google.rpc.BadRequest."}},
		},
		Required:             []string{"@type"},
		AdditionalProperties: true,
	}
}

// text turns a proto comment into a description: lines of a paragraph joined by
// spaces, paragraphs separated by a blank line.
func text(c protogen.Comments) string {
	var paras []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			paras = append(paras, strings.Join(cur, " "))
			cur = nil
		}
	}
	for _, l := range strings.Split(string(c), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "buf:lint:ignore ") {
			continue // an instruction to the linter, not documentation
		}
		if l == "" {
			flush()
			continue
		}
		cur = append(cur, l)
	}
	flush()
	return strings.Join(paras, "\n\n")
}

// firstSentence is a description's first sentence, without its period.
func firstSentence(s string) string {
	s, _, _ = strings.Cut(s, "\n\n")
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSuffix(s, ".")
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

func ptr[T any](v T) *T { return &v }

// ---- the document ----

type document struct {
	OpenAPI    string                `json:"openapi"`
	Info       info                  `json:"info"`
	Servers    []server              `json:"servers,omitempty"`
	Security   []map[string][]string `json:"security,omitempty"`
	Tags       []tag                 `json:"tags,omitempty"`
	Paths      ordered[pathItem]     `json:"paths"`
	Components struct {
		Schemas         ordered[*schema]          `json:"schemas"`
		SecuritySchemes map[string]securityScheme `json:"securitySchemes,omitempty"`
	} `json:"components"`
}

// server is an OpenAPI server object: where the API is reached.
type server struct {
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
}

// securityScheme is an OpenAPI security scheme; the daemon's is HTTP bearer.
type securityScheme struct {
	Type         string `json:"type"`
	Scheme       string `json:"scheme,omitempty"`
	BearerFormat string `json:"bearerFormat,omitempty"`
	Description  string `json:"description,omitempty"`
}

// bearerScheme is the name of the bearer security scheme in the document.
const bearerScheme = "bearerAuth"

type tag struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

type pathItem = ordered[*operation]

type operation struct {
	OperationID string             `json:"operationId"`
	Summary     string             `json:"summary,omitempty"`
	Description string             `json:"description,omitempty"`
	Tags        []string           `json:"tags,omitempty"`
	RequestBody *requestBody       `json:"requestBody,omitempty"`
	Responses   ordered[*response] `json:"responses"`
}

type requestBody struct {
	Description string               `json:"description,omitempty"`
	Content     map[string]mediaType `json:"content"`
}

type response struct {
	Description string               `json:"description"`
	Content     map[string]mediaType `json:"content,omitempty"`
}

// errorResponse is the default answer of every path: the gateway's google.rpc.Status.
func errorResponse() *response {
	return &response{
		Description: "The call failed: a google.rpc.Status whose gRPC code sets the HTTP status " +
			"(INVALID_ARGUMENT 400, UNAUTHENTICATED 401, NOT_FOUND 404, RESOURCE_EXHAUSTED 429 or 413 for a body over the size limit, " +
			"UNIMPLEMENTED 405 for a known path with the wrong method, CANCELED 499, UNAVAILABLE 503, DEADLINE_EXCEEDED 504, INTERNAL 500).",
		Content: content(&schema{Ref: componentRef(statusSchema)}),
	}
}

type mediaType struct {
	Schema *schema `json:"schema"`
}

type schema struct {
	Ref                  string           `json:"$ref,omitempty"`
	AllOf                []*schema        `json:"allOf,omitempty"`
	OneOf                []*schema        `json:"oneOf,omitempty"`
	Type                 string           `json:"type,omitempty"`
	Format               string           `json:"format,omitempty"`
	Pattern              string           `json:"pattern,omitempty"`
	Minimum              *float64         `json:"minimum,omitempty"`
	Maximum              *float64         `json:"maximum,omitempty"`
	Nullable             bool             `json:"nullable,omitempty"`
	Enum                 []any            `json:"enum,omitempty"`
	Description          string           `json:"description,omitempty"`
	Items                *schema          `json:"items,omitempty"`
	Properties           ordered[*schema] `json:"properties,omitempty"`
	Required             []string         `json:"required,omitempty"`
	AdditionalProperties any              `json:"additionalProperties,omitempty"` // *schema or bool
}

// entry is one member of a JSON object written in a chosen order.
type entry[T any] struct {
	key   string
	value T
}

// ordered is a JSON object whose members keep their order (proto field order,
// method order) instead of encoding/json's sorted map keys.
type ordered[T any] []entry[T]

func (o ordered[T]) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	buf.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := enc.Encode(e.key); err != nil {
			return nil, err
		}
		buf.WriteByte(':')
		if err := enc.Encode(e.value); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
