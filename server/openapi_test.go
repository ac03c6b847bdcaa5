package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// The OpenAPI document the daemon serves describes exactly what its REST gateway
// sends and accepts. Real requests to every route, and real answers (errors too),
// are validated against the served document made strict: an object may hold only
// the fields its schema names, so a field under another name (camelCase), an
// unknown field, an enum as a number or a 64-bit integer as a JSON number fails.
func TestOpenAPIMatchesREST(t *testing.T) {
	// The pictures' SVG answers are validated as the plain strings the document
	// declares.
	openapi3filter.RegisterBodyDecoder("image/svg+xml", openapi3filter.PlainBodyDecoder)
	d := startDaemon(t, nil)
	defer d.stop()
	c := &restChecker{t: t, client: &http.Client{Timeout: time.Minute}, base: "http://" + d.httpAddr}
	defer c.client.CloseIdleConnections()
	c.doc = servedDocument(t, c.client, c.base)

	plan := `{"model": {"name": "llama3-8b"},
		"cluster": {"name": "dgx-h100", "nodes": 5, "free_gpus": [
			{"node": 0, "gpus": [0, 1, 2, 3, 4, 5, 6, 7]}, {"node": 1, "gpus": [0, 1, 2, 3, 4, 5, 6, 7]},
			{"node": 2, "gpus": [0, 1, 2, 3, 4, 5, 6, 7]}, {"node": 3, "gpus": [0, 1, 2, 3, 4, 5, 6, 7]},
			{"node": 4, "gpus": [4, 5, 6, 7]}]},
		"training": {"seq_len": 8192, "global_batch": "256"},
		"gpus": 32, "top_k": 3, "objective": "OBJECTIVE_COST", "price_per_gpu_hour": 2.5, "token_budget": 1e12,
		"include_dominated": true, "constraints": {"tp": [1, 2, 4, 8], "recompute": ["RECOMPUTE_NONE", "RECOMPUTE_SELECTIVE"]}}`
	var planResp pb.EstimatePlanResponse
	c.call("EstimatePlan", http.MethodPost, "/v1/plans:estimate", plan, http.StatusOK, &planResp)
	if len(planResp.GetPlans()) == 0 || planResp.GetStats().GetEnumerated() == 0 || planResp.GetPlans()[0].GetCostUsd() == 0 {
		t.Errorf("EstimatePlan: no plans, statistics or cost in %v", &planResp)
	}
	// A catalog cluster sized to the job, two of its nodes excluded: no plan, and
	// the answer says why.
	var none pb.EstimatePlanResponse
	c.call("EstimatePlan, excluded nodes", http.MethodPost, "/v1/plans:estimate", `{"model": {"name": "llama3-8b"},
		"cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": "64"}, "gpus": 32, "exclude_nodes": [1, 2]}`,
		http.StatusOK, &none)
	if len(none.GetPlans()) != 0 || !strings.Contains(none.GetNoPlanReason(), "nodes 1, 2 excluded") {
		t.Errorf("EstimatePlan with excluded nodes: %d plans, reason %q", len(none.GetPlans()), none.GetNoPlanReason())
	}

	step := `{"model": {"name": "llama3-70b"}, "cluster": {"name": "dgx-h100"},
		"training": {"seq_len": 8192, "global_batch": "512", "precision": "PRECISION_BF16"},
		"layout": {"tp": 8, "pp": 2, "dp": 4, "micro_batch": 1, "zero": 1, "sp": true, "recompute": "RECOMPUTE_SELECTIVE"}}`
	var stepResp pb.EstimateStepResponse
	stepBody := c.call("EstimateStep", http.MethodPost, "/v1/steps:estimate", step, http.StatusOK, &stepResp)
	if len(stepResp.GetEstimate().GetCommunication()) == 0 {
		t.Errorf("EstimateStep: no communication table in %v", &stepResp)
	}

	// A cluster described in full (GPU by name, fabric, NICs, network, host), a model
	// by architecture (MoE), offload, a what-if.
	defined := `{"model": {"architecture": {"name": "moe-16x", "layers": 16, "hidden": 4096, "heads": 32, "kv_heads": 8,
			"ffn": 14336, "gated_mlp": true, "vocab": 32000, "moe": {"experts": 8, "top_k": 2}}},
		"cluster": {"nodes": 2, "definition": {"name": "two-h100-nodes", "gpu_name": "H100-SXM", "gpus_per_node": 8,
			"intra": {"kind": "nvswitch", "gpu_bandwidth_gbps": 450, "nvls": true},
			"nics": {"per_node": 8, "gbps": 400, "kind": "infiniband"},
			"network": {"rail_optimized": true, "nodes_per_leaf": 16, "oversubscription": 1},
			"host": {"memory_gb": 2048, "memory_bandwidth_gbps": 600, "link_gbps": 63, "gpus_per_link": 2}}},
		"training": {"seq_len": 4096, "global_tokens": "4194304"},
		"layout": {"tp": 2, "pp": 2, "dp": 4, "ep": 4, "micro_batch": 1, "zero": 1, "offload": "optimizer",
			"schedule": "SCHEDULE_1F1B"},
		"degraded_nic_speed": 0.5}`
	var definedResp pb.EstimateStepResponse
	c.call("EstimateStep, cluster by definition", http.MethodPost, "/v1/steps:estimate", defined, http.StatusOK, &definedResp)
	if definedResp.GetEstimate().GetMemory().GetHostGb() == 0 {
		t.Errorf("EstimateStep with offload: no host memory in %v", definedResp.GetEstimate().GetMemory())
	}

	rank := `{"objective": "OBJECTIVE_THROUGHPUT", "configs": [` + step + `,
		{"model": {"name": "llama3-70b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": "512"},
		 "layout": {"tp": 3, "pp": 2, "dp": 4, "micro_batch": 1}}]}`
	var rankResp pb.RankConfigsResponse
	c.call("RankConfigs", http.MethodPost, "/v1/configs:rank", rank, http.StatusOK, &rankResp)
	if r := rankResp.GetResults(); len(r) != 2 || len(r[1].GetError().GetViolations()) == 0 {
		t.Errorf("RankConfigs: want the second config to fail with violations, got %v", &rankResp)
	}

	collective := `{"cluster": {"name": "dgx-h100"}, "nodes": 4, "collective": "COLLECTIVE_ALL_REDUCE",
		"size_bytes": "1073741824", "concurrent": true, "launch": "LAUNCH_PER_PROCESS"}`
	var collResp pb.SimulateCollectiveResponse
	c.call("SimulateCollective", http.MethodPost, "/v1/collectives:simulate", collective, http.StatusOK, &collResp)
	if len(collResp.GetConsidered()) == 0 || len(collResp.GetNotApplicable()) == 0 {
		t.Errorf("SimulateCollective: want considered and not applicable algorithms, got %v", &collResp)
	}

	var catalog pb.ListCatalogResponse
	c.call("ListCatalog", http.MethodGet, "/v1/catalog", "", http.StatusOK, &catalog)
	if len(catalog.GetGpus()) == 0 || len(catalog.GetSystems()) == 0 || len(catalog.GetModels()) == 0 {
		t.Error("ListCatalog: empty catalog")
	}

	// Errors: google.rpc.Status with a google.rpc.BadRequest in its details.
	bad := strings.Replace(step, `"tp": 8`, `"tp": 3`, 1)
	c.call("EstimateStep, invalid layout", http.MethodPost, "/v1/steps:estimate", bad, http.StatusBadRequest, nil)
	unknown := strings.Replace(plan, "llama3-8b", "no-such-model", 1)
	c.call("EstimatePlan, unknown model", http.MethodPost, "/v1/plans:estimate", unknown, http.StatusNotFound, nil)
	// The gateway refuses a field the document does not have (so the request is not
	// validated: it is not a valid request).
	c.send("SimulateCollective, unknown field", http.MethodPost, "/v1/collectives:simulate",
		strings.Replace(collective, `"nodes"`, `"node_count"`, 1), http.StatusBadRequest, false)

	// The check itself: answers written otherwise than the gateway writes them, or
	// carrying a field the document does not name, are refused.
	t.Run("refuses", func(t *testing.T) {
		c := *c
		c.t = t
		camel, err := protojson.Marshal(&stepResp) // JSON (camelCase) names
		if err != nil {
			t.Fatal(err)
		}
		enumNumbers, err := protojson.MarshalOptions{UseProtoNames: true, UseEnumNumbers: true}.Marshal(&stepResp)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			body []byte
		}{
			{"camelCase names", camel},
			{"enum numbers", enumNumbers},
			{"unknown top-level field", withField(t, stepBody, nil, "speed")},
			{"unknown nested field", withField(t, stepBody, []string{"estimate", "breakdown"}, "idle_s")},
		} {
			if bytes.Equal(tc.body, stepBody) {
				t.Fatalf("%s: the altered answer is the real one", tc.name)
			}
			if err := c.validateResponse(http.MethodPost, "/v1/steps:estimate", http.StatusOK, tc.body); err == nil {
				t.Errorf("%s: an answer the gateway would not send passes the document:\n%s", tc.name, tc.body)
			}
		}
		if err := c.validateRequest(http.MethodPost, "/v1/steps:estimate", strings.Replace(step, "seq_len", "seqLen", 1)); err == nil {
			t.Error("a request with a camelCase field passes the document")
		}
		if err := c.validateRequest(http.MethodPost, "/v1/steps:estimate", strings.Replace(step, `"global_batch": "512"`, `"global_batch": "5x12"`, 1)); err == nil {
			t.Error("a 64-bit integer that is not a number passes the document")
		}
	})

	// A 64-bit integer may be sent as a JSON number, as the README's examples do:
	// the document says so (a client generated from it accepts 512) and the
	// gateway takes it.
	numeric := strings.Replace(step, `"global_batch": "512"`, `"global_batch": 512`, 1)
	var numericResp pb.EstimateStepResponse
	c.call("EstimateStep, int64 as a number", http.MethodPost, "/v1/steps:estimate", numeric, http.StatusOK, &numericResp)
	if numericResp.GetEstimate().GetStepTimeS() != stepResp.GetEstimate().GetStepTimeS() {
		t.Errorf("global_batch 512 and \"512\" give different answers")
	}
	// Zero values are written: a placement's first node is node 0.
	if !regexp.MustCompile(`"node":\s*0\b`).Match(c.send("EstimatePlan, zero values", http.MethodPost, "/v1/plans:estimate", plan, http.StatusOK, true)) {
		t.Error("the first node of a placement is not written as \"node\": 0")
	}

	// The pictures, served beside the gateway, are in the document too.
	for _, pic := range []struct{ path, body string }{{"/v1/pictures:schedule", step}, {"/v1/pictures:pareto", plan}} {
		if err := c.validateRequest(http.MethodPost, pic.path, pic.body); err != nil {
			t.Errorf("%s: the request does not match the document: %v", pic.path, err)
		}
		resp, err := c.client.Post(c.base+pic.path, "application/json", strings.NewReader(pic.body))
		if err != nil {
			t.Fatal(err)
		}
		svg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		in := &openapi3filter.ResponseValidationInput{RequestValidationInput: c.input(http.MethodPost, pic.path, ""),
			Status: resp.StatusCode, Header: resp.Header, Options: validation}
		if err := openapi3filter.ValidateResponse(context.Background(), in.SetBodyBytes(svg)); err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("%s: HTTP %d, the answer does not match the document: %v", pic.path, resp.StatusCode, err)
		}
	}
}

// The document says where the API is and how a bearer token is sent, so that a
// generator takes it whole.
func TestOpenAPIServersAndSecurity(t *testing.T) {
	d := startDaemon(t, nil)
	defer d.stop()
	client := &http.Client{Timeout: time.Minute}
	defer client.CloseIdleConnections()
	doc := servedDocument(t, client, "http://"+d.httpAddr)
	if len(doc.Servers) == 0 || !strings.HasPrefix(doc.Servers[0].URL, "http://") {
		t.Errorf("servers: %v", doc.Servers)
	}
	bearer := doc.Components.SecuritySchemes["bearerAuth"]
	if bearer == nil || bearer.Value.Type != "http" || bearer.Value.Scheme != "bearer" {
		t.Fatalf("no HTTP bearer security scheme: %v", doc.Components.SecuritySchemes)
	}
	// Optional: a call may go with no token (an empty requirement) or with one.
	var anonymous, withToken bool
	for _, r := range doc.Security {
		if len(r) == 0 {
			anonymous = true
		}
		if _, ok := r["bearerAuth"]; ok {
			withToken = true
		}
	}
	if !anonymous || !withToken {
		t.Errorf("security %v: want the token optional", doc.Security)
	}
}

// Every property of every schema, and every schema, says what it is; a property
// named for a unit states the unit, and a bandwidth whether it is bytes (GB/s) or
// bits (Gb/s) per second.
func TestOpenAPIDescriptions(t *testing.T) {
	d := startDaemon(t, nil)
	defer d.stop()
	client := &http.Client{Timeout: time.Minute}
	defer client.CloseIdleConnections()
	doc := servedDocument(t, client, "http://"+d.httpAddr)
	units := []struct{ suffix, want string }{
		{"_gbps", `GB/s|Gb/s`}, {"_gb", `\bGB\b`}, {"_us", `µs`}, {"_ms", `\bms\b`}, {"_s", `second`},
		{"_bytes", `\b[Bb]ytes?\b|\bB\b`}, {"_usd", `US dollars|\$`}, {"_pct", `percent|%`},
	}
	for name, s := range doc.Components.Schemas {
		if s.Value.Description == "" {
			t.Errorf("schema %s has no description", name)
		}
		for prop, ps := range s.Value.Properties {
			desc := ps.Value.Description
			if strings.TrimSpace(desc) == "" {
				t.Errorf("%s.%s has no description", name, prop)
				continue
			}
			for _, u := range units {
				if strings.HasSuffix(prop, u.suffix) {
					if !regexp.MustCompile(u.want).MatchString(desc) {
						t.Errorf("%s.%s: the description does not state its unit (%s): %q", name, prop, u.want, desc)
					}
					break
				}
			}
		}
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.Summary == "" || op.Description == "" {
				t.Errorf("%s %s has no summary or description", method, path)
			}
		}
	}
}

// servedDocument fetches /openapi.json, checks it is a valid OpenAPI 3 document,
// and closes every object schema that does not say otherwise (the gateway refuses
// unknown request fields; the test holds answers to the same rule).
func servedDocument(t *testing.T, client *http.Client, base string) *openapi3.T {
	t.Helper()
	resp, err := client.Get(base + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi.json: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		t.Fatalf("/openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("/openapi.json is OpenAPI %q, want 3", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("/openapi.json is not a valid OpenAPI document: %v", err)
	}
	closed := false
	for _, s := range doc.Components.Schemas {
		if v := s.Value; v.Type.Is("object") && len(v.Properties) > 0 && v.AdditionalProperties.Has == nil && v.AdditionalProperties.Schema == nil {
			v.AdditionalProperties.Has = new(false)
			closed = true
		}
	}
	if !closed {
		t.Fatal("no object schema to close")
	}
	return doc
}

// restChecker sends requests to the daemon and validates them and their answers
// against the document.
type restChecker struct {
	t      *testing.T
	client *http.Client
	base   string
	doc    *openapi3.T
}

// validation checks bodies and parameters; the bearer token is optional in the
// document and checked by the daemon itself (security_test.go), so any token, or
// none, passes here.
var validation = &openapi3filter.Options{MultiError: true, IncludeResponseStatus: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}

// call validates the request, sends it, checks the HTTP status, validates the
// answer, and decodes it into out (when not nil) with the gateway's unmarshaler
// rules (proto names, unknown fields refused).
func (c *restChecker) call(name, method, path, body string, want int, out proto.Message) []byte {
	c.t.Helper()
	answer := c.send(name, method, path, body, want, true)
	if out != nil {
		if err := (protojson.UnmarshalOptions{}).Unmarshal(answer, out); err != nil {
			c.t.Errorf("%s: the answer does not decode: %v", name, err)
		}
	}
	return answer
}

func (c *restChecker) send(name, method, path, body string, want int, validRequest bool) []byte {
	c.t.Helper()
	if validRequest {
		if err := c.validateRequest(method, path, body); err != nil {
			c.t.Errorf("%s: the request does not match the document: %v", name, err)
		}
	}
	req, err := http.NewRequest(method, c.base+path, bodyReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		c.t.Fatalf("%s: %v", name, err)
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		c.t.Fatalf("%s: %v", name, err)
	}
	if resp.StatusCode != want {
		c.t.Errorf("%s: HTTP %d, want %d: %s", name, resp.StatusCode, want, answer)
	}
	if resp.Header.Get("Content-Type") != "application/json" {
		c.t.Errorf("%s: Content-Type %q", name, resp.Header.Get("Content-Type"))
	}
	if err := c.validateResponse(method, path, resp.StatusCode, answer); err != nil {
		c.t.Errorf("%s: the answer (HTTP %d) does not match the document: %v\n%s", name, resp.StatusCode, err, answer)
	}
	return answer
}

func (c *restChecker) route(method, path string) *routers.Route {
	c.t.Helper()
	item := c.doc.Paths.Value(path)
	if item == nil || item.GetOperation(method) == nil {
		c.t.Fatalf("the document has no %s %s", method, path)
	}
	return &routers.Route{Spec: c.doc, Path: path, PathItem: item, Method: method, Operation: item.GetOperation(method)}
}

func (c *restChecker) input(method, path, body string) *openapi3filter.RequestValidationInput {
	req, err := http.NewRequest(method, c.base+path, bodyReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return &openapi3filter.RequestValidationInput{Request: req, Route: c.route(method, path), Options: validation}
}

func (c *restChecker) validateRequest(method, path, body string) error {
	return openapi3filter.ValidateRequest(context.Background(), c.input(method, path, body))
}

func (c *restChecker) validateResponse(method, path string, code int, body []byte) error {
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: c.input(method, path, ""),
		Status:                 code,
		Header:                 http.Header{"Content-Type": {"application/json"}},
		Options:                validation,
	}
	return openapi3filter.ValidateResponse(context.Background(), in.SetBodyBytes(body))
}

func bodyReader(body string) io.Reader {
	if body == "" {
		return http.NoBody
	}
	return strings.NewReader(body)
}

// withField returns the JSON object data with one more member, name, in the object
// at path.
func withField(t *testing.T, data []byte, path []string, name string) []byte {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	obj := root
	for _, p := range path {
		next, ok := obj[p].(map[string]any)
		if !ok {
			t.Fatalf("no object at %s in %s", strings.Join(path, "."), data)
		}
		obj = next
	}
	if _, ok := obj[name]; ok || slices.Contains(path, name) {
		t.Fatalf("%s is already there", name)
	}
	obj[name] = 1
	out, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
