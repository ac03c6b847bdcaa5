// Package jsonl reads JSON Lines held in memory, the form stepcost keeps its
// measured data in (estimator/step/accuracy/testdata/published_runs.jsonl,
// estimator/collective/accuracy/testdata/nccl_*.jsonl) and the form
// calibrate.ParseMeasurementRows reads a user's collective measurements in: one
// JSON object a line, blank lines skipped, lines numbered from 1 so that an error
// can name the line.
package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxLine is the longest line read, 1 MiB; a longer one stops the Scanner with
// bufio.ErrTooLong. The largest row stepcost ships is a few KiB.
const MaxLine = 1 << 20

// Scanner steps through the lines of data that are not blank.
type Scanner struct {
	sc   *bufio.Scanner
	line int
	raw  []byte
}

// NewScanner reads data. Its buffer starts at 4 KiB and grows only for a long
// line, up to MaxLine.
func NewScanner(data []byte) *Scanner {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, MaxLine)
	return &Scanner{sc: sc}
}

// Scan advances to the next line that is not blank; false at the end of data or
// on an error (Err).
func (s *Scanner) Scan() bool {
	for s.sc.Scan() {
		s.line++
		if s.raw = bytes.TrimSpace(s.sc.Bytes()); len(s.raw) > 0 {
			return true
		}
	}
	s.raw = nil
	return false
}

// Line is the number of the current line, from 1, blank lines counted.
func (s *Scanner) Line() int { return s.line }

// Bytes is the current line without its surrounding white space; it is valid
// until the next Scan.
func (s *Scanner) Bytes() []byte { return s.raw }

// Err is the error that stopped Scan (bufio.ErrTooLong for a line longer than
// MaxLine); nil at the end of data.
func (s *Scanner) Err() error { return s.sc.Err() }

// Decode reads every line of data that is not blank into a T with
// json.Unmarshal: a field T does not have is passed over. A line that does not
// decode is refused as "<name> line <n>: <json's error>"; a line longer than
// MaxLine with the Scanner's error. On an error Decode returns no rows.
func Decode[T any](name string, data []byte) ([]T, error) {
	return decode[T](name, data, json.Unmarshal)
}

// DecodeStrict is Decode reading each line with UnmarshalStrict: a field T does
// not have, or text after a line's JSON value, refuses the line, so a misspelt
// field is not read as an unset one.
func DecodeStrict[T any](name string, data []byte) ([]T, error) {
	return decode[T](name, data, UnmarshalStrict)
}

func decode[T any](name string, data []byte, unmarshal func([]byte, any) error) ([]T, error) {
	var out []T
	s := NewScanner(data)
	for s.Scan() {
		var r T
		if err := unmarshal(s.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", name, s.Line(), err)
		}
		out = append(out, r)
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// ErrTrailing is UnmarshalStrict's error for a line that holds more than one JSON
// value.
var ErrTrailing = errors.New("text after the JSON value")

// UnmarshalStrict decodes line, one JSON value, into v as json.Unmarshal does but
// refuses a field v does not have (json.Decoder.DisallowUnknownFields: the error
// `json: unknown field "<name>"`) and anything after the value (ErrTrailing). The
// decoder's own error comes back as it is, so a caller can word it by field.
func UnmarshalStrict(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ErrTrailing
	}
	return nil
}
