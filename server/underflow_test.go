package server

import (
	"net/http"
	"strings"
	"testing"
)

// A number too small for a double (1e-400, or 0.000…1 past 324 places) is read by
// JSON decoders as 0: a what-if of 1e-400 was answered as none asked for, a
// bandwidth of 1e-400 refused as "got 0", a value the caller did not send. Over
// REST it is refused naming the field and the number as sent; 0, -0 and the
// smallest doubles are taken.
func TestUnderflowingNumbersRefused(t *testing.T) {
	d, _ := startServing(t)
	tiny := "0." + strings.Repeat("0", 400) + "1"
	for _, c := range []struct {
		name, path, body, field, got string
	}{
		{"what-if", "/v1/steps:estimate", with(okStep, "slow_gpu_speed", raw(`1e-400`)), "slow_gpu_speed", "1e-400"},
		{"what-if as a string", "/v1/steps:estimate", with(okStep, "degraded_nic_speed", "-2.5E-999"), "degraded_nic_speed", "-2.5E-999"},
		{"what-if without an exponent", "/v1/steps:estimate", with(okStep, "degraded_link_speed", raw(tiny)), "degraded_link_speed", "0.0000000000"},
		{"price", "/v1/plans:estimate", with(okPlan, "price_per_gpu_hour", raw(`3e-330`), "token_budget", 1e12, "objective", "OBJECTIVE_COST"), "price_per_gpu_hour", "3e-330"},
		{"in a list", "/v1/configs:rank", `{"configs": [` + okStep + `, ` + with(okStep, "training.optimizer", raw(`{"weight_bytes": 2, "grad_bytes": 1e-400, "state_bytes": 12}`)) + `]}`,
			"configs[1].training.optimizer.grad_bytes", "1e-400"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := postRefusal(t, d, c.path, c.body, http.StatusBadRequest)
			if len(r.violations) != 1 || r.violations[0][0] != c.field || !strings.Contains(r.violations[0][1], "(got "+c.got) ||
				!strings.Contains(r.violations[0][1], "read as 0") {
				t.Errorf("%.400s", r.body)
			}
		})
	}
	for _, v := range []string{`0`, `-0`, `0.0e-400`, `5e-324`, `"0"`} {
		body := with(okStep, "slow_gpu_speed", raw(v))
		resp, err := http.Post("http://"+d.httpAddr+"/v1/steps:estimate", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := http.StatusOK; v == `5e-324` {
			want = http.StatusBadRequest // taken as sent, and out of the what-if's range
			if resp.StatusCode != want {
				t.Errorf("slow_gpu_speed %s: HTTP %d, want %d", v, resp.StatusCode, want)
			}
		} else if resp.StatusCode != want {
			t.Errorf("slow_gpu_speed %s: HTTP %d, want %d", v, resp.StatusCode, want)
		}
	}
}
