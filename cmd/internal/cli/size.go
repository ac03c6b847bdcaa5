package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxSize bounds a message size: 1 PiB.
const maxSize = 1 << 50

// ParseSize reads a message size in bytes. Suffixes follow nccl-tests (-b/-e): K, M,
// G, T are powers of 1024, as are KiB, MiB, GiB, TiB; KB, MB, GB, TB are powers of
// 1000; B or no suffix is bytes. Fractions are allowed if the result is a whole
// number of bytes ("1.5KiB" is 1536). What is not a size at all (empty, not a
// number, an unknown unit) is a usage error (exit 2); a size out of range, not.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, usagef("size is empty (want e.g. 1GiB, 64M, 4096)")
	}
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') && t[i-1] != '.' {
		i--
	}
	if !strings.ContainsAny(t, "0123456789") {
		// NaN, Inf: no number at all, not a number before an unknown unit.
		return 0, usagef("size %q: %q is not a number", s, t)
	}
	num, unit := strings.TrimSpace(t[:i]), strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := map[string]float64{
		"": 1, "b": 1,
		"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
		"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
		"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
		"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
	}[unit]
	if !ok {
		return 0, usagef("size %q: unknown unit %q (want B, K/KiB, M/MiB, G/GiB, T/TiB, or KB/MB/GB/TB for powers of 1000)", s, t[i:])
	}
	// A number out of float64's range is a size out of range (1e400 is +Inf,
	// 1e-400 is 0), not something other than a number.
	v, err := strconv.ParseFloat(num, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || num == "" {
		return 0, usagef("size %q: %q is not a number", s, num)
	}
	b := v * mult
	switch {
	case math.IsNaN(b) || b <= 0:
		return 0, fmt.Errorf("size %q: must be positive", s)
	case b > maxSize:
		return 0, fmt.Errorf("size %q: larger than the 1 PiB limit", s)
	case b != math.Trunc(b):
		return 0, fmt.Errorf("size %q: is not a whole number of bytes", s)
	}
	return int64(b), nil
}

// FormatSize prints bytes with a binary unit ("1 GiB", "1.5 MiB", "96 B").
func FormatSize(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if b == math.Trunc(b) {
		return fmt.Sprintf("%.0f %s", b, units[i])
	}
	return fmt.Sprintf("%.3g %s", b, units[i])
}
