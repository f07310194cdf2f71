package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
)

// wire is how one error code travels: the status of the plain JSON API, and
// the status name and HTTP status of the Firebase callable protocol (the
// names its SDKs know, from google.rpc.Code; an unknown name reaches apps
// as "internal").
type wire struct {
	status         int
	callableStatus string
	callableHTTP   int
}

// wireOf is the one mapping from error codes to the wire.
var wireOf = map[errs.Code]wire{
	errs.InvalidArgument:      {http.StatusBadRequest, "INVALID_ARGUMENT", 400},
	errs.Unauthenticated:      {http.StatusUnauthorized, "UNAUTHENTICATED", 401},
	errs.PermissionDenied:     {http.StatusForbidden, "PERMISSION_DENIED", 403},
	errs.NotFound:             {http.StatusNotFound, "NOT_FOUND", 404},
	errs.MethodNotAllowed:     {http.StatusMethodNotAllowed, "INVALID_ARGUMENT", 400},
	errs.AlreadyExists:        {http.StatusConflict, "ALREADY_EXISTS", 409},
	errs.FailedPrecondition:   {http.StatusConflict, "FAILED_PRECONDITION", 400},
	errs.PayloadTooLarge:      {http.StatusRequestEntityTooLarge, "INVALID_ARGUMENT", 400},
	errs.UnsupportedMediaType: {http.StatusUnsupportedMediaType, "INVALID_ARGUMENT", 400},
	errs.ResourceExhausted:    {http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", 429},
	errs.OutOfRange:           {http.StatusBadRequest, "OUT_OF_RANGE", 400},
	errs.Unavailable:          {http.StatusServiceUnavailable, "UNAVAILABLE", 503},
	errs.DataLoss:             {http.StatusInternalServerError, "DATA_LOSS", 500},
	errs.Internal:             {http.StatusInternalServerError, "INTERNAL", 500},
}

func wireFor(err error) wire {
	if w, ok := wireOf[errs.CodeOf(err)]; ok {
		return w
	}
	return wireOf[errs.Internal]
}

// Status returns the plain API's HTTP status for an error.
func Status(err error) int { return wireFor(err).status }

// ErrorBody is the JSON shape of every error of the plain API.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is {"code", "message"} of an error.
type ErrorDetail struct {
	Code    errs.Code `json:"code"`
	Message string    `json:"message"`
}

// CallableErrorBody is the callable protocol's error shape.
type CallableErrorBody struct {
	Error struct {
		Status  string          `json:"status"`
		Message string          `json:"message"`
		Details CallableDetails `json:"details"`
	} `json:"error"`
}

// CallableDetails tell apps what the status name alone cannot: our own
// code (e.g. PAYLOAD_TOO_LARGE), the field to fix, and when to retry.
type CallableDetails struct {
	Code              errs.Code `json:"code"`
	Field             string    `json:"field,omitempty"`
	RetryAfterSeconds int       `json:"retry_after_seconds,omitempty"`
}

// ErrorDetailOf renders err as a client may see it: internal errors get a
// generic message, their detail goes to the log only.
func ErrorDetailOf(err error) ErrorDetail {
	d := ErrorDetail{Code: errs.CodeOf(err), Message: "internal error"}
	if e, ok := clientError(err); ok {
		d.Message = e.Message
	}
	return d
}

// WriteJSON renders body into a buffer first, so a failed encode never sends
// half a response, then writes it with status.
func WriteJSON(w http.ResponseWriter, status int, body any) (int, error) {
	b, err := encode(body)
	if err != nil {
		return WriteError(w, fmt.Errorf("encode response: %w", err))
	}
	writeBytes(w, status, b)
	return status, nil
}

// WriteError writes err as {"error": {"code", "message"}}, with Retry-After
// when the error says when to retry. It returns the status written and err,
// for the request's log line.
func WriteError(w http.ResponseWriter, err error) (int, error) {
	setRetryAfter(w, err)
	status := Status(err)
	b, _ := encode(ErrorBody{Error: ErrorDetailOf(err)}) // two strings: cannot fail
	writeBytes(w, status, b)
	return status, err
}

// writeCallableResult answers a callable request: {"result": body}, its
// integers past 2^53 wrapped the way the SDKs decode them.
func writeCallableResult(w http.ResponseWriter, body any) (int, error) {
	b, err := encode(struct {
		Result any `json:"result"`
	}{body})
	if err != nil {
		return writeCallableError(w, fmt.Errorf("encode response: %w", err))
	}
	writeBytes(w, http.StatusOK, wrapIntegers(b))
	return http.StatusOK, nil
}

// writeCallableError answers a callable request with the protocol's error.
func writeCallableError(w http.ResponseWriter, err error) (int, error) {
	setRetryAfter(w, err)
	wi := wireFor(err)
	var body CallableErrorBody
	d := ErrorDetailOf(err)
	body.Error.Status, body.Error.Message = wi.callableStatus, d.Message
	body.Error.Details.Code = d.Code
	if e, ok := clientError(err); ok {
		body.Error.Details.Field = e.Field
		body.Error.Details.RetryAfterSeconds = retryAfterSeconds(e.RetryAfter)
	}
	b, _ := encode(body)
	writeBytes(w, wi.callableHTTP, b)
	return wi.callableHTTP, err
}

func setRetryAfter(w http.ResponseWriter, err error) {
	if e, ok := clientError(err); ok && e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(e.RetryAfter)))
	}
}

func retryAfterSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int(max(time.Second, d.Round(time.Second)) / time.Second)
}

func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeBytes(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b)
}

// clientError returns the *errs.Error a client may see, if err holds one.
func clientError(err error) (*errs.Error, bool) {
	e, ok := errors.AsType[*errs.Error](err)
	if !ok || e.Code == errs.Internal {
		return nil, false
	}
	return e, true
}

// writeEarlyError answers an error found before the body is parsed, when
// the protocol is not known yet (401, 403, 429, 503: codes with the same
// HTTP status in both, TestEarlyErrorsHaveOneStatus): the error object carries both shapes, the plain API's code and
// the callable protocol's status and details, each ignoring the other's
// members.
func writeEarlyError(w http.ResponseWriter, err error) (int, error) {
	setRetryAfter(w, err)
	wi := wireFor(err)
	d := ErrorDetailOf(err)
	var body struct {
		Error struct {
			Code    errs.Code       `json:"code"`
			Status  string          `json:"status"`
			Message string          `json:"message"`
			Details CallableDetails `json:"details"`
		} `json:"error"`
	}
	body.Error.Code, body.Error.Status, body.Error.Message = d.Code, wi.callableStatus, d.Message
	body.Error.Details.Code = d.Code
	if e, ok := clientError(err); ok {
		body.Error.Details.Field = e.Field
		body.Error.Details.RetryAfterSeconds = retryAfterSeconds(e.RetryAfter)
	}
	b, _ := encode(body)
	writeBytes(w, wi.status, b)
	return wi.status, err
}
