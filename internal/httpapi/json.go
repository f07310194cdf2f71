package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/shardcount/shardcount/internal/errs"
)

// MaxDepth is the deepest JSON nesting a request body may have.
const MaxDepth = 16

// Unmarshal decodes one JSON object into dst, strictly: member names match
// the json tags exactly (case included), a name given twice, an unknown
// name, a wrong type, trailing data, deep nesting, invalid UTF-8 and a null
// or non-object body are all INVALID_ARGUMENT errors that name the field.
// encoding/json would accept the first four; the json v2 reference
// implementation (github.com/go-json-experiment/json, which became
// encoding/json/v2) rejects them.
func Unmarshal(body []byte, dst any) error { return unmarshal(body, dst) }

// unmarshal is Unmarshal with more options (a callable's integers).
func unmarshal(body []byte, dst any, opts ...json.Options) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if bytes.Equal(trimmed, []byte("null")) {
			return errs.New(errs.InvalidArgument, "request body must be a JSON object, not null")
		}
		if len(trimmed) > 0 && trimmed[0] != '[' && !jsontext.Value(trimmed).IsValid() {
			return errs.New(errs.InvalidArgument, "request body is not valid JSON")
		}
		return errs.New(errs.InvalidArgument, "request body must be a JSON object")
	}
	if err := checkDepth(trimmed, MaxDepth); err != nil {
		return err
	}
	if err := json.Unmarshal(trimmed, dst, append(opts, json.RejectUnknownMembers(true))...); err != nil {
		return decodeError(err)
	}
	return nil
}

func decodeError(err error) error {
	if e, ok := errors.AsType[*errs.Error](err); ok {
		return e // a type's own decoding refused it, naming the field
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errs.New(errs.InvalidArgument, "request body is truncated JSON")
	}
	if e, ok := errors.AsType[*jsontext.SyntacticError](err); ok {
		if e.Err == jsontext.ErrDuplicateName {
			return errs.Invalid(fieldName(e.JSONPointer), "is given more than once")
		}
		return errs.New(errs.InvalidArgument, "request body is not valid JSON (byte %d)", e.ByteOffset)
	}
	if e, ok := errors.AsType[*json.SemanticError](err); ok {
		field := fieldName(e.JSONPointer)
		switch {
		case e.Err == json.ErrUnknownName:
			return errs.Invalid(field, "is not a known field (names are case-sensitive)")
		case field == "":
			return errs.New(errs.InvalidArgument, "request body must be a JSON object")
		case e.GoType != nil:
			return errs.Invalid(field, "must be %s", typeName(e.GoType))
		}
		return errs.Invalid(field, "is not valid")
	}
	return errs.Wrap(errs.InvalidArgument, err, "request body is not valid JSON")
}

// fieldName turns a JSON pointer such as /instruments/0/price/micros into
// instruments[0].price.micros, the way messages name fields.
func fieldName(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if _, err := strconv.Atoi(tok); err == nil && b.Len() > 0 {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
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

// UnmarshalQuery sets dst's fields from a query string, by their json
// tags (case-sensitive): the same struct a callable request's data decodes
// into. Fields may be string, int, int64 or bool, or pointers to them. An
// unknown or repeated parameter, or a value of the wrong type, is an
// INVALID_ARGUMENT error naming it.
func UnmarshalQuery(q url.Values, dst any) error {
	v := reflect.ValueOf(dst).Elem()
	fields := map[string]reflect.Value{}
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			fields[name] = v.Field(i)
		}
	}
	for name, vals := range q {
		f, ok := fields[name]
		if !ok {
			return errs.Invalid(name, "is not a known parameter (names are case-sensitive)")
		}
		if len(vals) != 1 {
			return errs.Invalid(name, "must be given once")
		}
		if f.Kind() == reflect.Pointer {
			f.Set(reflect.New(f.Type().Elem()))
			f = f.Elem()
		}
		switch f.Kind() {
		case reflect.String:
			if !utf8.ValidString(vals[0]) {
				return errs.Invalid(name, "must be UTF-8") // Firestore refuses other strings: its error would be a 5xx
			}
			f.SetString(vals[0])
		case reflect.Int, reflect.Int64:
			n, err := strconv.ParseInt(vals[0], 10, 64)
			if err != nil || f.OverflowInt(n) {
				return errs.Invalid(name, "must be an integer")
			}
			f.SetInt(n)
		case reflect.Bool:
			switch vals[0] {
			case "true":
				f.SetBool(true)
			case "false":
				f.SetBool(false)
			default:
				return errs.Invalid(name, "must be true or false")
			}
		default:
			return fmt.Errorf("httpapi: query parameter %s of unsupported type %s", name, f.Type())
		}
	}
	return nil
}
