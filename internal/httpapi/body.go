package httpapi

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/shardcount/shardcount/internal/errs"
)

// isJSON reports whether the request says its body is JSON.
func isJSON(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == "application/json"
}

// readBody reads a POST body of at most max bytes, without parsing it.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return nil, tooLarge(max)
	}
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "request body could not be read")
	}
	return body, nil
}

func tooLarge(max int64) error {
	return errs.New(errs.PayloadTooLarge, "request body must be at most %d bytes", max)
}

// callableData returns the data of a callable request, whose body is an
// object with exactly one member, "data". Calling with no argument sends
// null, which reads as {}.
func callableData(body []byte) ([]byte, bool) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' || checkDepth(trimmed, MaxDepth+1) != nil {
		return nil, false
	}
	var envelope map[string]jsontext.Value
	if json.Unmarshal(trimmed, &envelope) != nil || len(envelope) != 1 {
		return nil, false
	}
	data, ok := envelope["data"]
	if !ok {
		return nil, false
	}
	if data.Kind() == 'n' {
		return []byte("{}"), true
	}
	return data, true
}
