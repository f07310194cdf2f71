// Package errs is the project's one error vocabulary.
//
// Domain and storage code return *Error values with a Code and a message
// that names the offending field; the HTTP edge maps each Code to a status
// exactly once (internal/httpapi), for the plain JSON API and the Firebase
// callable protocol alike. Any other error is an internal error: it is
// logged and never shown to a client.
package errs

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Code classifies an error for clients. The values are the strings clients
// see in {"error": {"code": ...}}; most are also callable status names.
type Code string

const (
	InvalidArgument      Code = "INVALID_ARGUMENT"
	Unauthenticated      Code = "UNAUTHENTICATED"
	PermissionDenied     Code = "PERMISSION_DENIED"
	NotFound             Code = "NOT_FOUND"
	MethodNotAllowed     Code = "METHOD_NOT_ALLOWED"
	AlreadyExists        Code = "ALREADY_EXISTS"
	FailedPrecondition   Code = "FAILED_PRECONDITION"
	PayloadTooLarge      Code = "PAYLOAD_TOO_LARGE"
	UnsupportedMediaType Code = "UNSUPPORTED_MEDIA_TYPE"
	ResourceExhausted    Code = "RESOURCE_EXHAUSTED"
	// OutOfRange is a request that is valid alone but would take a value
	// past its bound (a counter past counter.MaxCount).
	OutOfRange  Code = "OUT_OF_RANGE"
	Unavailable Code = "UNAVAILABLE"
	// DataLoss is stored data the functions cannot use: written outside
	// them, it breaks their invariants (a shard sum past int64, a counter
	// document without a valid shard count). Retrying cannot help.
	DataLoss Code = "DATA_LOSS"
	Internal Code = "INTERNAL"
)

// Error is an error a client may see.
type Error struct {
	Code    Code
	Message string
	// Field is the request field, header or parameter to fix, when one is
	// to blame; Message starts with it.
	Field string
	// RetryAfter, when set, tells the client how long to wait before trying
	// again (RESOURCE_EXHAUSTED, UNAVAILABLE, FAILED_PRECONDITION).
	RetryAfter time.Duration
	// Err is the underlying cause, logged but never shown to clients.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an *Error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: sprintf(format, args...)}
}

// Invalid reports a bad request field; the message starts with the field name
// so clients can tell which input to fix.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Code: InvalidArgument, Field: Prefix(field), Message: Prefix(field) + " " + sprintf(format, args...)}
}

// Under returns err with its field placed under prefix, e.g. "items[3].",
// for errors of one element of a list; other errors are returned as is.
func Under(prefix string, err error) error {
	e, ok := errors.AsType[*Error](err)
	if !ok || prefix == "" || e.Field == "" {
		return err
	}
	c := *e
	c.Field, c.Message = prefix+e.Field, prefix+e.Message
	if !strings.HasPrefix(e.Message, e.Field) { // a message that does not name its field first
		c.Message = prefix + e.Field + ": " + e.Message
	}
	return &c
}

// Wrap returns an *Error with the given code whose cause is err.
func Wrap(code Code, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: sprintf(format, args...), Err: err}
}

// Retryable returns an UNAVAILABLE error asking the client to retry after
// wait; cause is logged, never shown.
func Retryable(cause error, wait time.Duration, format string, args ...any) *Error {
	return &Error{Code: Unavailable, Message: sprintf(format, args...), RetryAfter: wait, Err: cause}
}

// prefixLen is how much of a client's input an error message echoes.
const prefixLen = 64

// Prefix is s as an error message may echo it: its first 64 bytes (whole
// characters), then "…" when there is more, so no error grows with what a
// client sends.
func Prefix(s string) string {
	if len(s) <= prefixLen {
		return s
	}
	cut := prefixLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// sprintf formats a message as fmt.Sprintf does, each string quoted by
// %q cut to its Prefix: a message quotes what a client sent that way, so
// none grows with it.
func sprintf(format string, args ...any) string {
	quoted := slices.Clone(args)
	n := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("+-# 0123456789.", format[j]) >= 0 {
			j++
		}
		if j == len(format) {
			break
		}
		if format[j] != '%' {
			if format[j] == 'q' && n < len(quoted) {
				quoted[n] = prefixed(quoted[n])
			}
			n++
		}
		i = j
	}
	return fmt.Sprintf(format, quoted...)
}

// prefixed is v as %q may quote it: a string (of any string type) or an
// error cut to its Prefix.
func prefixed(v any) any {
	switch v := v.(type) {
	case error:
		return Prefix(v.Error())
	case fmt.Stringer:
		return Prefix(v.String())
	}
	if r := reflect.ValueOf(v); r.Kind() == reflect.String {
		return Prefix(r.String())
	}
	return v
}

// CodeOf returns the Code of err, or Internal when err is not an *Error.
func CodeOf(err error) Code {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return Internal
}

// Is reports whether err is an *Error with the given code.
func Is(err error, code Code) bool {
	return err != nil && CodeOf(err) == code
}
