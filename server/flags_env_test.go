package server

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// A STEPCOST_ variable one letter or two from a flag's (STEPCOST_CACHE_BYTE) is
// named on standard error as setting nothing, with the variable meant: it was
// ignored without a word, the daemon running on the default it meant to change.
// Variables far from every flag's (STEPCOST_VERSION, the command line's
// STEPCOST_TOKEN) are a deployment's own business and pass in silence.
func TestEnvironmentNearAFlagIsNamed(t *testing.T) {
	t.Setenv("STEPCOST_CACHE_BYTE", "5")
	t.Setenv("STEPCOST_MAXGPUS", "64")
	t.Setenv("STEPCOST_VERSION", "2026.11.28")
	t.Setenv("STEPCOST_TOKEN", "x")
	var stderr bytes.Buffer
	if _, err := ParseFlags(nil, &stderr); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"stepcostd: STEPCOST_CACHE_BYTE sets no flag (did you mean STEPCOST_CACHE_BYTES, --cache-bytes?); ignored",
		"stepcostd: STEPCOST_MAXGPUS sets no flag (did you mean STEPCOST_MAX_GPUS, --max-gpus?); ignored",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q: %q", want, stderr.String())
		}
	}
	for _, quiet := range []string{"STEPCOST_VERSION", "STEPCOST_TOKEN"} {
		if strings.Contains(stderr.String(), quiet) {
			t.Errorf("%s named: %q", quiet, stderr.String())
		}
	}
}

// A flag's variable whose value does not parse says what the flag takes: it said
// "parse error".
func TestEnvironmentValueNamesItsType(t *testing.T) {
	for _, tc := range []struct{ env, value, want string }{
		{"STEPCOST_MAX_GPUS", "abc", `STEPCOST_MAX_GPUS="abc" (--max-gpus): must be an integer`},
		{"STEPCOST_CACHE_BYTES", "1GiB", `STEPCOST_CACHE_BYTES="1GiB" (--cache-bytes): must be an integer`},
		{"STEPCOST_DRAIN_DELAY", "5", `STEPCOST_DRAIN_DELAY="5" (--drain-delay): must be a duration such as 5s or 1m30s`},
		{"STEPCOST_METRICS", "yes", `STEPCOST_METRICS="yes" (--metrics): must be true or false`},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			_, err := ParseFlags(nil, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
}
