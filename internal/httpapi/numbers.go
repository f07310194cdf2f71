package httpapi

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Integers in the callable protocol. JSON numbers are doubles to most
// clients, so the Firebase SDKs wrap 64-bit integers: the iOS SDK sends a
// Swift Int (an Objective-C long long) and the Android SDK a Long as
// {"@type": "type.googleapis.com/google.protobuf.Int64Value", "value": "3"}
// (UInt64Value for unsigned ones), and every SDK unwraps such a value in a
// result. Some send an integral double, 3.0, for a number.

const (
	int64Type  = "type.googleapis.com/google.protobuf.Int64Value"
	uint64Type = "type.googleapis.com/google.protobuf.UInt64Value"
	// maxExact is the largest integer a double holds exactly (2^53): past
	// it, results are wrapped.
	maxExact = 1 << 53
)

// unwrapIntegers rewrites a callable request's data so that the strict
// decoder sees plain integers: Int64Value and UInt64Value wrappers become
// their integer, and an integral number written as a double (3.0, 3e2)
// becomes that integer. Anything else is left as it is, and so is the
// whole input when it is not valid JSON: Unmarshal then reports the error
// with the field it is in.
func unwrapIntegers(data []byte) []byte {
	var out bytes.Buffer
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true))
	enc := jsontext.NewEncoder(&out, jsontext.AllowDuplicateNames(true))
	if rewrite(dec, enc, unwrapNumber, unwrapObject) != nil {
		return data
	}
	return bytes.TrimSpace(out.Bytes())
}

// wrapIntegers rewrites a callable result so that every integer past 2^53
// either way reaches the SDKs whole: as an Int64Value wrapper, which they
// decode (the JavaScript SDK into a Number, the mobile SDKs into a 64-bit
// integer).
func wrapIntegers(result []byte) []byte {
	var out bytes.Buffer
	dec := jsontext.NewDecoder(bytes.NewReader(result))
	enc := jsontext.NewEncoder(&out)
	if rewrite(dec, enc, wrapNumber, nil) != nil {
		return result
	}
	return append(bytes.TrimSpace(out.Bytes()), '\n')
}

// rewrite copies one JSON value from dec to enc, passing each number to
// number and each object to object first (nil: none is replaced).
func rewrite(dec *jsontext.Decoder, enc *jsontext.Encoder,
	number func(jsontext.Token) jsontext.Value, object func(jsontext.Value) (jsontext.Value, bool)) error {
	switch dec.PeekKind() {
	case '{':
		if object != nil {
			raw, err := dec.ReadValue()
			if err != nil {
				return err
			}
			if v, ok := object(raw); ok {
				return enc.WriteValue(v)
			}
			sub := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true))
			return rewriteComposite(sub, enc, number, object)
		}
		return rewriteComposite(dec, enc, number, object)
	case '[':
		return rewriteComposite(dec, enc, number, object)
	case '0':
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		return enc.WriteValue(number(tok))
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	return enc.WriteToken(tok)
}

// rewriteComposite copies an object or an array, its members rewritten.
func rewriteComposite(dec *jsontext.Decoder, enc *jsontext.Encoder,
	number func(jsontext.Token) jsontext.Value, object func(jsontext.Value) (jsontext.Value, bool)) error {
	open, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if err := enc.WriteToken(open); err != nil {
		return err
	}
	for k := dec.PeekKind(); k != '}' && k != ']'; k = dec.PeekKind() {
		if open.Kind() == '{' {
			name, err := dec.ReadToken()
			if err != nil {
				return err
			}
			if err := enc.WriteToken(name); err != nil {
				return err
			}
		}
		if err := rewrite(dec, enc, number, object); err != nil {
			return err
		}
	}
	end, err := dec.ReadToken()
	if err != nil {
		return err
	}
	return enc.WriteToken(end)
}

// unwrapObject turns an Int64Value or UInt64Value wrapper whose value is a
// valid integer into that integer.
func unwrapObject(raw jsontext.Value) (jsontext.Value, bool) {
	var w struct {
		Type  string `json:"@type"`
		Value string `json:"value"`
	}
	if json.Unmarshal(raw, &w, json.RejectUnknownMembers(true)) != nil {
		return nil, false
	}
	switch w.Type {
	case int64Type:
		if n, err := strconv.ParseInt(w.Value, 10, 64); err == nil {
			return jsontext.Value(strconv.FormatInt(n, 10)), true
		}
	case uint64Type:
		if n, err := strconv.ParseUint(w.Value, 10, 64); err == nil {
			return jsontext.Value(strconv.FormatUint(n, 10)), true
		}
	}
	return nil, false
}

// unwrapNumber turns a number written with a fraction or an exponent that
// is an exact integer in int64's range (3.0, 3e2) into that integer.
func unwrapNumber(tok jsontext.Token) jsontext.Value {
	s := tok.String()
	if n, ok := exactInt64(s); ok {
		return jsontext.Value(n)
	}
	return jsontext.Value(s)
}

// exactInt64 returns the decimal form of the JSON number literal s when it
// is an integer within int64's range, in time linear in len(s) whatever
// its exponent: an arbitrary-precision parse (big.Rat, big.Float) of
// 1e999999 builds a million-digit number, seconds of CPU for ten bytes of
// input. The literal is digits × 10^exponent; an exponent or a digit
// string that cannot land in int64 is refused before any arithmetic.
func exactInt64(s string) (string, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return strconv.FormatInt(n, 10), true // already an integer
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mantissa, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	whole, frac, _ := strings.Cut(mantissa, ".")
	digits := strings.TrimLeft(whole+frac, "0")
	if digits == "" {
		return "0", true // zero, whatever the exponent
	}
	// The value is digits × 10^shift, digits without leading zeros.
	shift := -len(frac)
	if hasExp {
		e, err := strconv.Atoi(exp)
		// |e| past this cannot bring up to 2 × len(s) digits into int64.
		if err != nil || e > 19+len(s) || e < -2*len(s) {
			return "", false
		}
		shift += e
	}
	trimmed := strings.TrimRight(digits, "0")
	shift += len(digits) - len(trimmed)
	if shift < 0 || len(trimmed)+shift > 19 {
		return "", false // a fraction, or more than int64's 19 digits
	}
	n := trimmed + strings.Repeat("0", shift)
	if neg {
		n = "-" + n
	}
	if _, err := strconv.ParseInt(n, 10, 64); err != nil {
		return "", false
	}
	return n, true
}

// wrapNumber wraps an integer past ±2^53 as an Int64Value.
func wrapNumber(tok jsontext.Token) jsontext.Value {
	s := tok.String()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= maxExact && n >= -maxExact {
		return jsontext.Value(s)
	}
	return jsontext.Value(`{"@type":"` + int64Type + `","value":"` + s + `"}`)
}
