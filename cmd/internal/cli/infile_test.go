package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// A value the --in file gives is named as the file's field when refused or
// warned of, not as a flag the command line never gave: the file's
// training.cuda_device_max_connections 33 was refused as
// "--cuda-device-max-connections: … (got 33)". A flag given over the file is
// still named as the flag.
func TestInFileFieldsNamedAsTheFile(t *testing.T) {
	dir := t.TempDir()
	file := func(body string) string {
		f := filepath.Join(dir, "r.json")
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	const layout = `"layout": {"tp": 1, "dp": 8, "micro_batch": 1}`
	bad := file(`{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 64, "cuda_device_max_connections": 33}, ` + layout + `}`)
	for _, where := range [][]string{nil, {"--server", daemon(t)}} {
		code, _, errOut := run(append([]string{"estimate", "--in", bad}, where...)...)
		if code == 0 || !strings.Contains(errOut, "--in: training.cuda_device_max_connections: must be") || strings.Contains(errOut, "--cuda-device-max-connections") {
			t.Errorf("%v: file's 33: exit %d, %q", where, code, errOut)
		}
		code, _, errOut = run(append([]string{"estimate", "--in", bad, "--cuda-device-max-connections", "40"}, where...)...)
		if code == 0 || !strings.Contains(errOut, "--cuda-device-max-connections: must be") || !strings.Contains(errOut, "(got 40)") {
			t.Errorf("%v: flag's 40 over the file: exit %d, %q", where, code, errOut)
		}
	}
	dense := file(`{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 64, "cuda_device_max_connections": 2}, ` + layout + `}`)
	code, out, errOut := run("estimate", "--in", dense)
	if code != 0 || !strings.Contains(out, "--in: training.cuda_device_max_connections: no effect") {
		t.Errorf("file's 2 on a dense model: exit %d %s\n%s", code, errOut, out)
	}
}

// A string the --in file or a --model-file gives is held to the service's bound
// (wire.MaxTextBytes) before the command resolves it, with or without --server:
// a 3 MB model name was refused as an unknown model quoting all of it (3 MB on
// standard error), where the service says the name is too long.
func TestLongNamesInFilesRefusedAsTheService(t *testing.T) {
	dir := t.TempDir()
	name := strings.Repeat("x", 3<<20)
	in := filepath.Join(dir, "r.json")
	body := `{"model": {"name": "` + name + `"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 64}, "layout": {"tp": 1, "dp": 8, "micro_batch": 1}}`
	if err := os.WriteFile(in, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	mf := filepath.Join(dir, "m.json")
	for _, where := range [][]string{nil, {"--server", daemon(t)}} {
		code, _, errOut := run(append([]string{"estimate", "--in", in}, where...)...)
		if code != exitFailure || len(errOut) > 1000 || !strings.Contains(errOut, "--in: model.name: must be at most 1024 bytes (got 3145728)") {
			t.Errorf("%v --in: exit %d, %d bytes: %.300s", where, code, len(errOut), errOut)
		}
		for _, m := range []string{`"` + name + `"`, `{"name": "` + name + `"}`} {
			if err := os.WriteFile(mf, []byte(m), 0o600); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := run(append([]string{"estimate", "--model-file", mf, "--cluster", "dgx-h100", "--gpus", "8", "--tp", "1", "--mbs", "1", "--gbs", "8", "--seq", "4096"}, where...)...)
			if code != exitFailure || len(errOut) > 1000 || !strings.Contains(errOut, "model.name: must be at most 1024 bytes (got 3145728)") {
				t.Errorf("%v --model-file %.12s…: exit %d, %d bytes: %.300s", where, m, code, len(errOut), errOut)
			}
		}
	}
}

// An --in file cut short names the line it ends on, as a malformed one names
// the line of the fault: protojson says only "unexpected EOF".
func TestInFileCutShortNamesTheLine(t *testing.T) {
	in := filepath.Join(t.TempDir(), "r.json")
	body := "{\"model\": {\"name\": \"llama3-8b\"},\n \"cluster\": {\"name\": \"dgx-h100\"},\n \"training\": {\"seq_len\": 4096, \"global_ba"
	if err := os.WriteFile(in, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"estimate", "--in", in}, {"estimate", "--in", in, "--json", "--cuda-device-max-connections", "2"}} {
		code, _, errOut := run(args...)
		if code != exitFailure || !strings.Contains(errOut, "--in "+in+": want an EstimateStepRequest as JSON: ends inside a value at line 3") {
			t.Errorf("%v: exit %d, %s", args, code, errOut)
		}
	}
}

// A number JSON's grammar refuses but protojson's reader takes, an exponent
// without digits, is refused naming its line in the --in files read with
// protojson: estimate --in estimated "tp": 8e as tp 8, and a rank --in line ranked
// it.
func TestInFileExponentWithoutDigitsRefused(t *testing.T) {
	dir := t.TempDir()
	step := `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 256},` +
		"\n" + `"layout": {"tp": 8e, "pp": 1, "dp": 4, "micro_batch": 1}}`
	est := filepath.Join(dir, "step.json")
	lines := filepath.Join(dir, "rank.jsonl")
	for f, body := range map[string]string{est: step, lines: strings.ReplaceAll(step, "\n", "")} {
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := run("estimate", "--in", est)
	if code != exitFailure || !strings.Contains(errOut, "--in "+est+": want an EstimateStepRequest as JSON: malformed JSON at line 2, column 20: invalid character ',' in exponent of numeric literal") {
		t.Errorf("estimate --in: exit %d, %.300s%.300s", code, out, errOut)
	}
	code, out, errOut = run("rank", "--in", lines)
	if flat := strings.Join(strings.Fields(out), " "); code != exitFailure || !strings.Contains(flat, "line 1: not an EstimateStepRequest: malformed JSON at column 137: invalid character ',' in exponent of numeric literal") {
		t.Errorf("rank --in: exit %d, %.600s%.300s", code, out, errOut)
	}
}

// A request file that is JSON but not a valid request names the field at fault
// by its path, with the rule it broke, as the REST gateway answers the same body:
// estimate --in and rank --in said protojson's "proto: (line 1:91): invalid value
// for int32 field seqLen: \"x\"" (the field's JSON name, not its path) and
// "duplicate field \"tp\"" (which tp?), and a rank line's error carried no field
// violation.
func TestInFileDecodeErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	const ok = `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 64}, "layout": {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1}}`
	for _, c := range []struct{ from, to, field, rule string }{
		{`"seq_len": 4096`, `"seq_len": "x"`, "training.seq_len", `must be an integer between -2147483648 and 2147483647 (got "x")`},
		{`"tp": 1,`, `"tp": 1, "tpp": 2,`, "layout.tpp", `unknown field "tpp": stepcost.v1.Layout has tp, pp,`},
		{`"pp": 1,`, `"tp": 1,`, "layout.tp", "is given twice"},
		{`"micro_batch": 1}`, `"micro_batch": 1, "recompute": "FULL"}`, "layout.recompute", "must be one of RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL, RECOMPUTE_OPS (got \"FULL\")"},
		{`"global_batch": 64`, `"global_batch": 64, "moe_imbalance": 1e-400`, "training.moe_imbalance", "must be 0 or a number of magnitude at least 5e-324, the smallest a double holds (got 1e-400, which would be read as 0)"},
	} {
		body := strings.Replace(ok, c.from, c.to, 1)
		in := filepath.Join(dir, "r.json")
		if err := os.WriteFile(in, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		want := c.field + ": " + c.rule
		if code, _, errOut := run("estimate", "--in", in); code != exitFailure || !strings.Contains(errOut, "--in "+in+": want an EstimateStepRequest as JSON: "+want) {
			t.Errorf("estimate --in %s: exit %d, %.400s; want %q", c.to, code, errOut, want)
		}
		code, out, errOut := run("rank", "--in", in, "--format", "json")
		var resp pb.RankConfigsResponse
		if err := protojson.Unmarshal([]byte(out), &resp); err != nil || code != exitFailure || len(resp.GetResults()) != 1 {
			t.Fatalf("rank --in %s: exit %d, %v: %.300s%.300s", c.to, code, err, out, errOut)
		}
		e := resp.GetResults()[0].GetError()
		if !strings.HasPrefix(e.GetMessage(), "line 1: not an EstimateStepRequest: "+want) || len(e.GetViolations()) != 1 || e.GetViolations()[0].GetField() != c.field {
			t.Errorf("rank --in %s: error %v; want %q naming %s", c.to, e, want, c.field)
		}
	}
}
