package server

import (
	"strings"
	"testing"
)

func TestParseWarmUp(t *testing.T) {
	got, err := ParseWarmUp("dgx-h100:1024, hgx-b200:64")
	if err != nil || len(got) != 2 || got[0] != (WarmTarget{System: "dgx-h100", GPUs: 1024}) || got[1] != (WarmTarget{System: "hgx-b200", GPUs: 64}) {
		t.Errorf("%v, %v", got, err)
	}
	if got, err := ParseWarmUp("none"); err != nil || got != nil {
		t.Errorf("none: %v, %v", got, err)
	}
	if got, _ := ParseWarmUp("default"); len(got) != len(DefaultWarmUp()) || len(got) == 0 {
		t.Errorf("default: %v", got)
	}
	for _, bad := range []string{"dgx-h100", "dgx-h100:0", "no-such-system:8", "dgx-h100:x"} {
		if _, err := ParseWarmUp(bad); err == nil || !strings.Contains(err.Error(), "--warm-up") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
