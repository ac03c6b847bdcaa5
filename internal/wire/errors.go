package wire

import (
	"github.com/stepcost/stepcost/estimator/invalid"
)

// NotFoundError is an unknown catalog name in a request field.
type NotFoundError struct {
	Field string
	Err   error
}

func (e *NotFoundError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *NotFoundError) Unwrap() error { return e.Err }

// NotFound is err for an unknown catalog name in field.
func NotFound(field string, err error) error { return &NotFoundError{field, err} }

// LimitError is a request over one of the service's limits.
type LimitError struct {
	Field, Msg string
}

func (e *LimitError) Error() string { return e.Field + ": " + e.Msg }

// FieldErrors collects every field error inside err (joined errors included).
func FieldErrors(err error) []*invalid.Error {
	var out []*invalid.Error
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if fe, ok := e.(*invalid.Error); ok {
			out = append(out, fe)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

// Limit is the error of a request over a limit of the service, in field.
func Limit(field, msg string) error { return &LimitError{Field: field, Msg: msg} }
