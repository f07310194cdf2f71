package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"

	"github.com/shardcount/shardcount/internal/errs"
)

// MaxDepth is the deepest JSON nesting a request body may have.
const MaxDepth = 16

// DecodeJSON reads one JSON object of at most maxBytes from the request body
// into dst, rejecting unknown fields, trailing data and deep nesting. Errors
// are *errs.Error values that name the offending field.
func DecodeJSON(w http.ResponseWriter, r *http.Request, maxBytes int64, dst any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return errs.New(errs.PayloadTooLarge, "request body must be at most %d bytes", maxBytes)
	}
	if err != nil {
		return errs.Wrap(errs.InvalidArgument, err, "request body could not be read")
	}
	return Unmarshal(body, dst)
}

// Unmarshal is DecodeJSON on bytes already read: the part fuzz tests drive.
func Unmarshal(body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errs.New(errs.InvalidArgument, "request body must be a JSON object")
	}
	if err := checkDepth(body, MaxDepth); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errs.New(errs.InvalidArgument, "request body must hold a single JSON object")
	}
	return nil
}

func decodeError(err error) error {
	if e, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		if e.Field == "" {
			return errs.New(errs.InvalidArgument, "request body must be a JSON object")
		}
		return errs.Invalid(e.Field, "must be %s", typeName(e.Type))
	}
	if e, ok := errors.AsType[*json.SyntaxError](err); ok {
		return errs.New(errs.InvalidArgument, "request body is not valid JSON (byte %d)", e.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errs.New(errs.InvalidArgument, "request body is truncated JSON")
	}
	// encoding/json reports unknown fields only as text.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return errs.Invalid(strings.Trim(name, `"`), "is not a known field")
	}
	return errs.Wrap(errs.InvalidArgument, err, "request body is not valid JSON")
}

func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("an integer (%s)", t.Kind())
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

// checkDepth rejects JSON nested deeper than max, before any decoding
// allocates for it.
func checkDepth(body []byte, max int) error {
	depth, inString, escaped := 0, false, false
	for _, c := range body {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > max {
				return errs.New(errs.InvalidArgument, "request body is nested deeper than %d levels", max)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// CheckQuery rejects query parameters that are not in known or that are
// given more than once, naming the parameter.
func CheckQuery(q url.Values, known ...string) error {
	for name, vals := range q {
		if !slices.Contains(known, name) {
			return errs.Invalid(name, "is not a known parameter")
		}
		if len(vals) != 1 {
			return errs.Invalid(name, "must be given once")
		}
	}
	return nil
}
