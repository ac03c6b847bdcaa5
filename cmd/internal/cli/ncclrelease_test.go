package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// collective says which NCCL release's rules priced the call: the release the
// cluster file states, or, when it states none, NCCL 2.27's (the documented
// default: docs/cluster-file.md, nccl), in process and through a daemon; --json
// is the service's answer, which says it in nccl_release, as estimate's --json
// does (the JSON said nothing of the release: the text was the command's own). A
// release newer than the newest the model knows (2.31) is priced by 2.31's rules
// and says so; one that does not parse, or that cannot be an NCCL release (3.x,
// a minor past 99), is refused naming the field.
func TestCollectiveStatesTheNCCLRelease(t *testing.T) {
	addr := daemon(t)
	dir := t.TempDir()
	file := func(name, nccl string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(`{"base": "dgx-h100", "name": "t", "nodes": 2`+nccl+"}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, where := range [][]string{nil, {"--server", addr}} {
		for _, tc := range []struct {
			nccl, want string
			code       int
		}{
			{"", "NCCL 2.27's rules: the cluster states no release (nccl)", exitOK},
			{`, "nccl": "2.29"`, "NCCL 2.29, the cluster's release (nccl)", exitOK},
			{`, "nccl": "2.21.5"`, "NCCL 2.21.5, the cluster's release (nccl)", exitOK},
			{`, "nccl": "2.32.1"`, "NCCL 2.31's rules: the cluster's release, 2.32.1 (nccl), is newer than the newest stepcost models", exitOK},
			{`, "nccl": "2.x"`, `nccl: must be an NCCL release 2.0 through 2.99, as major.minor or major.minor.patch, e.g. 2.28.9 (a release after 2.31, the newest stepcost models, is priced by 2.31's rules) (got "2.x")`, exitFailure},
			{`, "nccl": "9.99"`, `nccl: NCCL 9: no such release (NCCL 2 is the newest major); must be an NCCL release 2.0 through 2.99`, exitFailure},
			{`, "nccl": "3.0.1"`, `nccl: NCCL 3: no such release (NCCL 2 is the newest major); must be an NCCL release 2.0 through 2.99`, exitFailure},
			{`, "nccl": "2.100"`, `nccl: minor 100: past 99, the last minor nccl.h's version code holds`, exitFailure},
		} {
			args := append([]string{"collective", "--cluster-file", file("c.json", tc.nccl), "--nodes", "2", "--op", "sendrecv", "--size", "256KiB"}, where...)
			code, out, errOut := run(args...)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("nccl %s %q: exit %d, %q %q; want exit %d and %q", tc.nccl, where, code, out, errOut, tc.code, tc.want)
			}
			if tc.code != exitOK {
				continue
			}
			est := append([]string{"estimate", "--cluster-file", file("c.json", tc.nccl), "--model", "llama3-8b", "--gpus", "16", "--tp", "8",
				"--seq", "4096", "--gbs", "64", "--mbs", "1"}, where...)
			for _, a := range [][]string{args, est} {
				code, out, errOut := run(append(a, "--json")...)
				var got struct {
					NCCLRelease string `json:"nccl_release"`
				}
				if err := json.Unmarshal([]byte(out), &got); code != exitOK || err != nil || got.NCCLRelease != tc.want {
					t.Errorf("%s --json, nccl %s %q: exit %d (%s), nccl_release %q, want %q (%v)", a[0], tc.nccl, where, code, errOut, got.NCCLRelease, tc.want, err)
				}
			}
		}
	}
}

// A cluster file stating NCCL 2.32, newer than the newest release the model
// knows, is estimated (step, collective, plan) and calibrated, in process and
// through a daemon, and each answer prints the warning that 2.31's rules priced
// it; --json carries it in the answer's warnings. nccl-tests output printing
// "NCCL version 2.32.1" calibrates with the warning naming the file.
func TestNewerNCCLReleaseWarns(t *testing.T) {
	addr := daemon(t)
	dir := t.TempDir()
	cluster := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cluster, []byte("base: hgx-b200\nname: t\nnodes: 2\nnccl: \"2.32\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lambda, err := os.ReadFile("../../../estimator/calibrate/testdata/b200-ib/dstack-lambda-allreduce.txt")
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(string(lambda), "\n")
	first = strings.Replace(first, "nccl-headers=22602 nccl-library=22602", "", 1)
	sweep := filepath.Join(dir, "ar.txt")
	if err := os.WriteFile(sweep, []byte(first+"\nnode1:1:1 [0] NCCL INFO NCCL version 2.32.1+cuda12.8\n"+rest), 0o600); err != nil {
		t.Fatal(err)
	}
	const clusterWarning = "nccl 2.32 is newer than the newest release stepcost models (2.31); priced with 2.31's algorithm and protocol choices"
	fileWarning := sweep + ": NCCL 2.32.1 is newer than the newest release stepcost models (2.31); priced with 2.31's algorithm and protocol choices"
	for _, where := range [][]string{nil, {"--server", addr}} {
		for _, c := range []struct {
			args    []string
			warning string
		}{
			{[]string{"estimate", "--cluster-file", cluster, "--model", "llama3-8b", "--gpus", "16", "--tp", "8", "--seq", "4096", "--gbs", "64", "--mbs", "1"}, clusterWarning},
			{[]string{"collective", "--cluster-file", cluster, "--nodes", "2", "--op", "allreduce", "--size", "1GiB"}, clusterWarning},
			{[]string{"plan", "--cluster-file", cluster, "--model", "llama3-8b", "--gpus", "16", "--seq", "4096", "--gbs", "64"}, clusterWarning},
			{[]string{"calibrate", "--cluster-file", cluster, "--nodes", "2", "--gpus-per-node", "8", sweep}, clusterWarning},
			{[]string{"calibrate", "--cluster", "hgx-b200", "--nodes", "2", "--gpus-per-node", "8", sweep}, fileWarning},
		} {
			args := append(slices.Clone(c.args), where...)
			code, out, errOut := run(args...)
			// The text wraps long lines: compare with single spaces.
			if flat := strings.Join(strings.Fields(out), " "); code != exitOK || !strings.Contains(flat, "warning: "+c.warning) {
				t.Errorf("%q: exit %d, %s%s; want the warning %q", args, code, out, errOut, c.warning)
			}
			if c.args[0] == "plan" {
				continue // its --json is the service's answer too, with the warning in each plan
			}
			code, out, errOut = run(append(args, "--json")...)
			if code != exitOK || !strings.Contains(out, c.warning) {
				t.Errorf("%q --json: exit %d, %.300s%s; want the warning %q in the answer", args, code, out, errOut, c.warning)
			}
		}
	}
}
