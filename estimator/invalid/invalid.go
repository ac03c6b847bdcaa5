// Package invalid is the error type every estimator package returns for bad input:
// it names the offending field (by its JSON path) and the rule the value broke, so
// the CLI can print it and the service can map it to a field violation.
package invalid

import (
	"errors"
	"fmt"
	"math"
)

// Error is one invalid input field.
type Error struct {
	Field string // JSON path of the field, e.g. "intra.gpu_bandwidth_gbps"
	Rule  string // what the value must satisfy, with the value received

	// format and args are what Rule was written from (Field), kept so that a
	// transport can write the rule again with the values spelled its way
	// (Respell): the API names a schedule SCHEDULE_ZB_H1 where the command
	// line's flag takes zb-h1.
	format string
	args   []any
}

func (e *Error) Error() string { return e.Field + ": " + e.Rule }

// Field builds an *Error with a formatted rule.
func Field(field, format string, args ...any) *Error {
	return &Error{Field: field, Rule: fmt.Sprintf(format, args...), format: format, args: args}
}

// Under is e named by field instead, its rule kept as it was written (Respell
// writes it again).
func (e *Error) Under(field string) *Error {
	out := *e
	out.Field = field
	return &out
}

// Respell is the rule written again with each of its values passed through
// spell, which returns another spelling of a value it knows and the value itself
// otherwise; a rule not written by Field is returned as it is.
func (e *Error) Respell(spell func(any) any) string {
	if e.args == nil {
		return e.Rule
	}
	args := make([]any, len(e.args))
	for i, a := range e.args {
		args[i] = spell(a)
	}
	return fmt.Sprintf(e.format, args...)
}

// Is reports whether err holds at least one *Error.
func Is(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// Collector accumulates field errors under a path prefix.
type Collector struct {
	Prefix string
	errs   []error
}

// Add records a violation of field (relative to the prefix).
func (c *Collector) Add(field, format string, args ...any) {
	c.errs = append(c.errs, Field(c.Prefix+field, format, args...))
}

// Join records an error produced elsewhere (already carrying its full path).
func (c *Collector) Join(err error) {
	if err != nil {
		c.errs = append(c.errs, err)
	}
}

// Positive checks that v is a finite number > 0.
func (c *Collector) Positive(field string, v float64) {
	if !(v > 0) || math.IsInf(v, 0) {
		c.Add(field, "must be a positive finite number (got %v)", v)
	}
}

// NonNegative checks that v is a finite number ≥ 0.
func (c *Collector) NonNegative(field string, v float64) {
	if !(v >= 0) || math.IsInf(v, 0) {
		c.Add(field, "must be a finite number ≥ 0 (got %v)", v)
	}
}

// PositiveWithin checks that v is a number from lo to hi, lo > 0: positive, and
// within bounds that keep the arithmetic it feeds finite (a bandwidth of 1e-300
// makes every transfer take forever).
func (c *Collector) PositiveWithin(field string, v, lo, hi float64) {
	if !(v >= lo && v <= hi) {
		c.Add(field, "must be a positive finite number from %g to %g (got %v)", lo, hi, v)
	}
}

// NonNegativeWithin checks that v is a number from 0 to hi.
func (c *Collector) NonNegativeWithin(field string, v, hi float64) {
	if !(v >= 0 && v <= hi) {
		c.Add(field, "must be a finite number from 0 to %g (got %v)", hi, v)
	}
}

// Err returns the collected errors joined, or nil.
func (c *Collector) Err() error { return errors.Join(c.errs...) }
