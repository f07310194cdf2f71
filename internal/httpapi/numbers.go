package httpapi

import (
	"bytes"
	"math/big"
	"strconv"

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
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		return jsontext.Value(s) // already an integer
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok || !r.IsInt() || !r.Num().IsInt64() {
		return jsontext.Value(s)
	}
	return jsontext.Value(r.Num().String())
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
