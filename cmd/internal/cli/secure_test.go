package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/internal/testpki"
	"github.com/stepcost/stepcost/server"
)

// The commands with --server reach a daemon that requires mutual TLS and a bearer
// token; what is missing or wrong is reported, and the token is never printed.
func TestAgainstSecuredDaemon(t *testing.T) {
	const token, wrong = "cli-9f8e7d6c5b4a39281706", "cli-9f8e7d6c5b4a39281707"
	p := testpki.New(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	tokens := write("tokens", "# the CLI\n"+token+"\n")
	addr := daemon(t, func(c *server.Config) {
		c.TLS = server.TLSConfig{CertFile: p.ServerCert, KeyFile: p.ServerKey, ClientCAFile: p.CA}
		c.Auth = server.AuthConfig{TokenFile: tokens}
	})
	plan := write("plan.json", `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 64}, "gpus": 16, "top_k": 2}`)
	rankIn := write("configs.jsonl", strings.SplitN(configs, "\n", 2)[0]+"\n") // one good config: rank exits 0
	mtls := []string{"--server", addr, "--tls-ca", p.CA, "--tls-cert", p.ClientCert, "--tls-key", p.ClientKey}
	collective := []string{"collective", "--cluster", "dgx-h100", "--nodes", "2", "--op", "allgather", "--size", "256MiB", "--json"}

	t.Setenv(tokenEnv, token)
	for _, args := range [][]string{
		collective,
		{"estimate", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "64", "--tp", "8", "--pp", "2", "--gbs", "512", "--seq", "8192", "--json"},
		{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--gbs", "64", "--seq", "8192", "--top", "2", "--json"},
		{"rank", "--in", rankIn, "--format", "json", "--progress=false"},
	} {
		code, out, errOut := run(append(args, mtls...)...)
		if code != 0 || !json.Valid([]byte(out)) {
			t.Errorf("%s with TLS and the token: exit %d %s", args[0], code, errOut)
		}
	}
	if code, out, errOut := run(append([]string{"load", "--in", plan, "--concurrency", "2", "--requests", "6"}, mtls...)...); code != 0 || !strings.Contains(out, "6 requests in") || !strings.Contains(out, "0 errors") {
		t.Errorf("load: exit %d %s%s", code, out, errOut)
	}
	t.Setenv(tokenEnv, "")
	if code, _, errOut := run(append(collective, append(mtls, "--token-file", tokens)...)...); code != 0 {
		t.Errorf("--token-file: exit %d %s", code, errOut)
	}
	// A token file saved with a byte-order mark and CRLF line ends (a Windows
	// editor) holds the same token: the mark was sent as part of it.
	if code, _, errOut := run(append(collective, append(mtls, "--token-file", write("windows", "\uFEFF"+token+"\r\n"))...)...); code != 0 {
		t.Errorf("--token-file with a byte-order mark: exit %d %s", code, errOut)
	}

	for _, tc := range []struct {
		name, env string
		args      []string
		want      string
	}{
		{"no token", "", mtls, "Unauthenticated desc = missing bearer token"},
		{"no token", "", mtls, "set STEPCOST_TOKEN or --token-file"},
		{"a wrong token", wrong, mtls, "Unauthenticated desc = invalid bearer token"},
		{"a wrong token file", "", append(mtls, "--token-file", write("wrong", wrong+"\n")), "invalid bearer token"},
		{"two tokens in the file", "", append(mtls, "--token-file", write("two", token+"\n"+wrong+"\n")), "want one token, found 2"},
		{"no client certificate", token, []string{"--server", addr, "--tls-ca", p.CA}, "add --tls-cert and --tls-key"},
		{"a client certificate from another CA", token, []string{"--server", addr, "--tls-ca", p.CA, "--tls-cert", p.StrangerCert, "--tls-key", p.StrangerKey}, "its CA must be in the server's --tls-client-ca"},
		{"the system's CAs", token, []string{"--server", addr, "--tls", "--tls-cert", p.ClientCert, "--tls-key", p.ClientKey}, "certificate signed by unknown authority"},
		{"no key", token, []string{"--server", addr, "--tls-ca", p.CA, "--tls-cert", p.ClientCert}, "--tls-cert and --tls-key: give both"},
		{"plain text", token, []string{"--server", addr}, "if the server uses TLS, add --tls or --tls-ca"},
		{"a token in clear text to another host", token, []string{"--server", "192.0.2.1:8081"}, "refusing to send the token in clear text"},
	} {
		t.Setenv(tokenEnv, tc.env)
		code, out, errOut := run(append(collective, tc.args...)...)
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, %q, want %q", tc.name, code, errOut, tc.want)
		}
		if strings.Contains(out+errOut, token) || strings.Contains(out+errOut, wrong) {
			t.Errorf("%s: the token is printed: %s", tc.name, errOut)
		}
	}
}
