package jsonl

import (
	"bufio"
	"errors"
	"strings"
	"testing"
)

type row struct {
	ID string `json:"id"`
	N  int    `json:"n"`
}

func TestDecodeSkipsBlankLinesAndUnknownFields(t *testing.T) {
	data := []byte("\n{\"id\": \"a\", \"n\": 1, \"extra\": true}\n   \n\t{\"id\": \"b\", \"n\": 2}  \n")
	rows, err := Decode[row]("x.jsonl", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0] != (row{"a", 1}) || rows[1] != (row{"b", 2}) {
		t.Fatalf("rows %+v, want a/1 and b/2", rows)
	}
}

func TestDecodeNamesFileAndLine(t *testing.T) {
	// The bad row is on line 4: blank lines count.
	data := []byte("{\"id\": \"a\"}\n\n{\"id\": \"b\"}\n{\"id\": \"c\", \"n\": \"three\"}\n")
	rows, err := Decode[row]("x.jsonl", data)
	if err == nil || !strings.HasPrefix(err.Error(), "x.jsonl line 4: json: cannot unmarshal string") {
		t.Fatalf("err %v, want x.jsonl line 4 and json's type error", err)
	}
	if rows != nil {
		t.Errorf("rows %+v returned with the error", rows)
	}
}

func TestScannerRefusesLongLine(t *testing.T) {
	data := []byte("{\"id\": \"a\"}\n{\"id\": \"" + strings.Repeat("x", MaxLine) + "\"}\n")
	s := NewScanner(data)
	var lines []int
	for s.Scan() {
		lines = append(lines, s.Line())
	}
	if len(lines) != 1 || lines[0] != 1 || !errors.Is(s.Err(), bufio.ErrTooLong) {
		t.Fatalf("lines %v, err %v; want line 1 then bufio.ErrTooLong", lines, s.Err())
	}
	if _, err := Decode[row]("x.jsonl", data); !errors.Is(err, bufio.ErrTooLong) {
		t.Fatalf("Decode err %v, want bufio.ErrTooLong", err)
	}
}

func TestScannerTrimsAndNumbers(t *testing.T) {
	s := NewScanner([]byte("  \n  {}  \r\n\n{\"id\":1}"))
	var got []string
	for s.Scan() {
		got = append(got, string(s.Bytes()))
		if s.Line() != map[string]int{"{}": 2, "{\"id\":1}": 4}[string(s.Bytes())] {
			t.Errorf("line %d for %q", s.Line(), s.Bytes())
		}
	}
	if s.Err() != nil || strings.Join(got, "|") != "{}|{\"id\":1}" {
		t.Fatalf("got %q err %v", got, s.Err())
	}
}

func TestDecodeStrictRefusesUnknownFieldAndTrailingText(t *testing.T) {
	good := []byte("{\"id\": \"a\", \"n\": 1}\n\n{\"id\": \"b\"}\n")
	rows, err := DecodeStrict[row]("x.jsonl", good)
	if err != nil || len(rows) != 2 || rows[0] != (row{"a", 1}) || rows[1] != (row{"b", 0}) {
		t.Fatalf("rows %+v err %v, want a/1 and b/0", rows, err)
	}
	for _, tt := range []struct{ name, data, want string }{
		{"unknown field", "{\"id\": \"a\"}\n{\"id\": \"b\", \"extra\": true}\n", `x.jsonl line 2: json: unknown field "extra"`},
		{"two values", "{\"id\": \"a\"} {\"id\": \"b\"}\n", "x.jsonl line 1: text after the JSON value"},
		{"type", "\n\n{\"n\": \"three\"}\n", "x.jsonl line 3: json: cannot unmarshal string"},
	} {
		rows, err := DecodeStrict[row]("x.jsonl", []byte(tt.data))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || rows != nil {
			t.Errorf("%s: rows %+v err %v, want no rows and %q", tt.name, rows, err, tt.want)
		}
	}
	if err := UnmarshalStrict([]byte("{\"id\": \"a\"} x"), &row{}); !errors.Is(err, ErrTrailing) {
		t.Errorf("UnmarshalStrict err %v, want ErrTrailing", err)
	}
}
