package server

import (
	"io"
	"log/slog"
	"strings"
	"testing"
)

// A --log-level (or STEPCOST_LOG_LEVEL) that is not a level is refused naming the
// levels it takes: it said slog's `level string "loud": unknown name`, which names
// none. The levels themselves, in any case, still set it.
func TestLogLevelRefusalNamesTheLevels(t *testing.T) {
	const want = `must be debug, info, warn or error (got "loud")`
	if _, err := ParseFlags([]string{"--log-level", "loud"}, io.Discard); err == nil || !strings.Contains(err.Error(), "log-level: "+want) {
		t.Errorf("--log-level loud: %v", err)
	}
	for s, l := range map[string]slog.Level{"debug": slog.LevelDebug, "INFO": slog.LevelInfo, "warn": slog.LevelWarn, "Error": slog.LevelError} {
		cfg, err := ParseFlags([]string{"--log-level", s}, io.Discard)
		if err != nil || cfg.LogLevel != l {
			t.Errorf("--log-level %s: %v %v", s, cfg.LogLevel, err)
		}
	}
	if cfg, err := ParseFlags(nil, io.Discard); err != nil || cfg.LogLevel != slog.LevelInfo {
		t.Errorf("default: %v %v", cfg.LogLevel, err)
	}
	t.Setenv("STEPCOST_LOG_LEVEL", "loud")
	if _, err := ParseFlags(nil, io.Discard); err == nil || !strings.Contains(err.Error(), `STEPCOST_LOG_LEVEL="loud" (--log-level): `+want) {
		t.Errorf("STEPCOST_LOG_LEVEL=loud: %v", err)
	}
}
