// Package strictjson checks JSON that Go's encoding/json will decode for what
// that decoder drops without a word: a key given twice in one object (it keeps
// the last; and it matches keys to fields without regard to case, so "Algorithm"
// and "algorithm" are one field given twice) and a second value after the first
// (json.Decoder.Decode reads the first). protojson and the YAML readers refuse
// both already; the files and rows read with encoding/json (the command line's
// --free-map and --model-file, calibration's measurement rows) check with it
// first.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxDepth bounds the nesting of arrays and objects: encoding/json's own
// limit (maxNestingDepth, encoding/json/scanner.go), which its Decoder.Token
// does not apply.
const maxDepth = 10000

// Check says what in data is not one JSON value whose objects give each key once
// (in any case): a key's path (`"gpu"."name" is given twice`), or a second value.
func Check(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var path []string // the keys down to the value read, quoted
	if err := value(dec, &path, 0); err != nil {
		return located(data, err)
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("more than one JSON value (after byte %d)", end)
	}
	return nil
}

// located says where in data the error err of its decoder is: input that ends
// inside a value (a file cut short: the decoder says "EOF" or, where it is
// "unexpected EOF"), at the line it ends on; a syntax error at its line. Input of
// white space alone holds no JSON value.
func located(data []byte, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		if len(bytes.TrimSpace(data)) == 0 {
			return errors.New("no JSON value")
		}
		return fmt.Errorf("ends inside a JSON value at line %d", 1+bytes.Count(data, []byte("\n")))
	case errors.As(err, &se):
		at := min(max(se.Offset, 0), int64(len(data)))
		return fmt.Errorf("%w at line %d", err, 1+bytes.Count(data[:at], []byte("\n")))
	}
	return err
}

// value reads the next value of dec, at depth under the keys in path, refusing
// an object's key given twice. The path is kept as its keys and written out only
// for an error: built whole at each level, it grew with the square of the depth.
func value(dec *json.Decoder, path *[]string, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); ok && (d == '{' || d == '[') && depth >= maxDepth {
		return fmt.Errorf("nested deeper than %d arrays and objects", maxDepth)
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]string{} // by the key in lower case: as it was written
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := k.(string)
			fold := strings.ToLower(key)
			if first, ok := seen[fold]; ok {
				at := strings.Join(*path, "")
				if first == key {
					return fmt.Errorf("%s is given twice", at+strconv.Quote(key))
				}
				return fmt.Errorf("%s is given twice (as %q and %q)", at+strconv.Quote(fold), first, key)
			}
			seen[fold] = key
			*path = append(*path, strconv.Quote(key)+".")
			err = value(dec, path, depth+1)
			*path = (*path)[:len(*path)-1]
			if err != nil {
				return err
			}
		}
		_, err = dec.Token() // '}'
		return err
	case json.Delim('['):
		for dec.More() {
			if err := value(dec, path, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ']'
		return err
	}
	return nil
}
