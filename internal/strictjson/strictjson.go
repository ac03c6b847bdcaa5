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

// Check says what in data is not one JSON value whose objects give each key once
// (in any case): a key's path (`"gpu"."name" is given twice`), or a second value.
func Check(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := value(dec, ""); err != nil {
		return err
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("more than one JSON value (after byte %d)", end)
	}
	return nil
}

// value reads the next value of dec, refusing an object's key given twice.
func value(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("no JSON value")
		}
		return err
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
			at := path + strconv.Quote(key)
			if first, ok := seen[fold]; ok {
				if first == key {
					return fmt.Errorf("%s is given twice", at)
				}
				return fmt.Errorf("%s is given twice (as %q and %q)", path+strconv.Quote(fold), first, key)
			}
			seen[fold] = key
			if err := value(dec, at+"."); err != nil {
				return err
			}
		}
		_, err = dec.Token() // '}'
		return err
	case json.Delim('['):
		for dec.More() {
			if err := value(dec, path); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ']'
		return err
	}
	return nil
}
