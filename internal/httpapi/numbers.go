package httpapi

import (
	"bytes"
	"errors"
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

// wrapIntegers rewrites a callable result so that every integer past 2^53
// either way reaches the SDKs whole: as an Int64Value wrapper, which they
// decode (the JavaScript SDK into a Number, the mobile SDKs into a 64-bit
// integer).
func wrapIntegers(result []byte) []byte {
	var out bytes.Buffer
	dec := jsontext.NewDecoder(bytes.NewReader(result))
	enc := jsontext.NewEncoder(&out)
	if (rewriter{number: wrapNumber}).value(dec, enc) != nil {
		return result
	}
	return append(bytes.TrimSpace(out.Bytes()), '\n')
}

// rewriter copies JSON from a decoder to an encoder in one pass, each
// number through number.
type rewriter struct {
	number func(jsontext.Token) jsontext.Value
}

// value copies one JSON value.
func (rw rewriter) value(dec *jsontext.Decoder, enc *jsontext.Encoder) error {
	switch dec.PeekKind() {
	case '{':
		return rw.object(dec, enc)
	case '[':
		if err := copyToken(dec, enc); err != nil {
			return err
		}
		for dec.PeekKind() != ']' {
			if err := rw.value(dec, enc); err != nil {
				return err
			}
		}
		return copyToken(dec, enc)
	case '0':
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		return enc.WriteValue(rw.number(tok))
	}
	return copyToken(dec, enc)
}

// object copies an object, member by member.
func (rw rewriter) object(dec *jsontext.Decoder, enc *jsontext.Encoder) error {
	if err := copyToken(dec, enc); err != nil {
		return err
	}
	for dec.PeekKind() != '}' {
		if err := copyToken(dec, enc); err != nil { // a member's name
			return err
		}
		if err := rw.value(dec, enc); err != nil {
			return err
		}
	}
	return copyToken(dec, enc)
}

func copyToken(dec *jsontext.Decoder, enc *jsontext.Encoder) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	return enc.WriteToken(tok)
}

// wrapped is the integer of an Int64Value or UInt64Value wrapper's two
// members (name, value, name, value), when they are one.
func wrapped(m []jsontext.Token) (string, bool) {
	var typ, value string
	for i := 0; i < len(m); i += 2 {
		switch m[i].String() {
		case "@type":
			typ = m[i+1].String()
		case "value":
			value = m[i+1].String()
		}
	}
	if m[0].String() == m[2].String() {
		return "", false // one name twice
	}
	switch typ {
	case int64Type:
		if n, err := strconv.ParseInt(value, 10, 64); err == nil {
			return strconv.FormatInt(n, 10), true
		}
	case uint64Type:
		if n, err := strconv.ParseUint(value, 10, 64); err == nil {
			return strconv.FormatUint(n, 10), true
		}
	}
	return "", false
}

// callableIntegers decode the integers of a callable's data as the SDKs
// write them, in the same pass as the rest of it: a number, an integral
// number written as a double (3.0, 3e2), or an Int64Value or UInt64Value
// wrapper. Anything else is the strict decoder's to refuse, naming the
// field.
var callableIntegers = json.WithUnmarshalers(json.JoinUnmarshalers(
	json.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *int64) error {
		n, err := callableInteger(dec)
		if err == nil {
			*v = n
		}
		return err
	}),
	json.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *int) error {
		n, err := callableInteger(dec)
		if err == nil {
			*v = int(n) // int is 64 bits where the functions run
		}
		return err
	}),
))

// callableInteger reads one integer of a callable's data.
func callableInteger(dec *jsontext.Decoder) (int64, error) {
	var text string
	switch dec.PeekKind() {
	case '0':
		tok, err := dec.ReadToken()
		if err != nil {
			return 0, err
		}
		n, ok := exactInt64(tok.String())
		if !ok {
			return 0, errNotAnInteger
		}
		text = n
	case '{':
		var members []jsontext.Token
		if _, err := dec.ReadToken(); err != nil {
			return 0, err
		}
		for len(members) < 4 && dec.PeekKind() == '"' {
			tok, err := dec.ReadToken()
			if err != nil {
				return 0, err
			}
			members = append(members, tok.Clone())
		}
		if len(members) != 4 || dec.PeekKind() != '}' {
			return 0, errNotAnInteger
		}
		if _, err := dec.ReadToken(); err != nil {
			return 0, err
		}
		n, ok := wrapped(members)
		if !ok {
			return 0, errNotAnInteger
		}
		text = n
	default:
		return 0, json.SkipFunc // the decoder's own error
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, errNotAnInteger // a UInt64Value past int64
	}
	return n, nil
}

var errNotAnInteger = errors.New("not an integer")

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
