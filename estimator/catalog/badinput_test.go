package catalog_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
)

// Invalid UTF-8 is a syntax error with its position: encoding/json would carry it
// into names as U+FFFD where YAML refuses the file, so the two formats disagreed.
func TestDecodeSpecInvalidUTF8(t *testing.T) {
	_, err := catalog.DecodeSpec([]byte("{\"base\": \"dgx-a100\",\n \"description\": \"\x97\"}"))
	if !errors.Is(err, catalog.ErrSyntax) || !strings.Contains(err.Error(), "line 2, column 18") || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("got %v, want a syntax error at line 2, column 18 about UTF-8", err)
	}
	if _, err := catalog.DecodeSpec([]byte(`{"base": "dgx-a100", "description": "NVLink – 600 GB/s"}`)); err != nil {
		t.Errorf("valid UTF-8 refused: %v", err)
	}
}
