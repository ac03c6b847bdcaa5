package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// collective says which NCCL release's rules priced the call: the release the
// cluster file states, or, when it states none, NCCL 2.27's (the documented
// default: docs/cluster-file.md, nccl), in process and through a daemon; --json
// is the service's answer, which says it in nccl_release, as estimate's --json
// does (the JSON said nothing of the release: the text was the command's own). A release that does not parse, or is not one the collective model
// prices (2.0 through 2.31), is refused naming the field.
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
			{`, "nccl": "2.x"`, `nccl: must be an NCCL release the collective model prices, 2.0 through 2.31, as major.minor or major.minor.patch (patch at most 99), e.g. 2.28.9 (got "2.x")`, exitFailure},
			{`, "nccl": "9.99"`, `nccl: must be an NCCL release the collective model prices, 2.0 through 2.31`, exitFailure},
			{`, "nccl": "2.32.1"`, `nccl: must be an NCCL release the collective model prices, 2.0 through 2.31`, exitFailure},
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
