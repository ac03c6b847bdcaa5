package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// strictJSON checks that data is one JSON value whose objects give each key once.
// Go's decoder keeps the last of a key given twice and reads the first value of
// several, dropping the rest without a word; protojson (--in, rank's lines) and
// the cluster file's reader already refuse both. The error names the key by its
// path (`"layers" is given twice`, `"gpu"."name" …`).
func strictJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := uniqueKeys(dec, ""); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("more than one JSON value (after byte %d)", dec.InputOffset())
	}
	return nil
}

// uniqueKeys reads the next value of dec, refusing an object's key given twice.
func uniqueKeys(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("no JSON value")
		}
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := k.(string)
			at := path + strconv.Quote(key)
			if seen[key] {
				return fmt.Errorf("%s is given twice", at)
			}
			seen[key] = true
			if err := uniqueKeys(dec, at+"."); err != nil {
				return err
			}
		}
		_, err = dec.Token() // '}'
		return err
	case json.Delim('['):
		for dec.More() {
			if err := uniqueKeys(dec, path); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ']'
		return err
	}
	return nil
}
