package service

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/httpapi"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/rollup"
)

const maxEventBody = 1 << 20

// eventHandler receives CloudEvents over plain HTTP, decoding each request
// on its own with sdk-go's HTTP binding, under the request's context.
//
// It is not registered with functions.CloudEvent, whose receiver in
// functions-framework-go v1.9.2 (sdk-go v2.16.2) hands every request to one
// shared unbuffered channel: a request whose context ends before the
// hand-off leaves its message behind, and each later request then runs
// another's message on another's context, which can wedge an instance
// (https://github.com/cloudevents/sdk-go/issues/1224,
// https://github.com/cloudevents/sdk-go/issues/1332; the fixes are not
// merged). Served like this, rollupCounter takes concurrent events, and
// `gcloud functions deploy --trigger-event-filters` deploys it as before:
// the trigger posts the same binary-mode CloudEvent to the function's URL.
//
// Answers: 204 when the roll-up is done, or when no retry can help (a
// deleted counter, or a counter whose stored data breaks its invariants:
// rollup.Settled); 4xx for a request that is not a usable binary-mode
// CloudEvent; 5xx for every other error, so Eventarc delivers the event
// again (503 with Retry-After when it looks transient, 500 otherwise).
// Anything but a 204 of a done roll-up is logged at ERROR with its cause.
func (s *Server) eventHandler(spec Spec) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx := logging.NewRequestContext(r, s.log, s.cfg.ProjectID, "function", spec.Name)
		status, err := s.receive(ctx, w, r, spec)
		level := slog.LevelDebug
		if status >= 400 || err != nil {
			level = slog.LevelError // with its cause: the event is redelivered (5xx) or dropped (4xx)
		}
		if !logging.Enabled(ctx, level) {
			return
		}
		attrs := []slog.Attr{slog.Int("status", status), slog.Float64("latency_ms", float64(time.Since(start).Microseconds())/1000)}
		if err != nil {
			attrs = append(attrs, slog.String("error", err.Error()))
		}
		logging.FromContext(ctx).LogAttrs(ctx, level, "event", attrs...)
	}
}

func (s *Server) receive(ctx context.Context, w http.ResponseWriter, r *http.Request, spec Spec) (int, error) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		return httpapi.WriteError(w, errs.New(errs.MethodNotAllowed, "%s receives CloudEvents with POST, not %s", spec.Name, r.Method))
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxEventBody)
	msg := cehttp.NewMessageFromHttpRequest(r)
	defer msg.Finish(nil)
	switch msg.ReadEncoding() {
	case binding.EncodingBinary:
	case binding.EncodingStructured, binding.EncodingBatch:
		return httpapi.WriteError(w, errs.New(errs.UnsupportedMediaType,
			"structured-mode CloudEvents are not accepted: Eventarc sends binary mode (ce-* headers, the data as the body)"))
	default:
		return httpapi.WriteError(w, errs.New(errs.InvalidArgument, "not a CloudEvent: binary mode needs the ce-specversion, ce-id, ce-source and ce-type headers"))
	}
	e, err := binding.ToEvent(ctx, msg)
	if err == nil {
		err = e.Validate()
	}
	if err != nil {
		return httpapi.WriteError(w, errs.Wrap(errs.InvalidArgument, err, "not a valid CloudEvent: %v", err))
	}
	logging.Annotate(ctx, "event_id", e.ID(), "event_type", e.Type())
	a, err := s.get()
	if err != nil {
		return httpapi.WriteError(w, err)
	}
	err = spec.event(a, ctx, *e)
	switch {
	case errs.Is(err, errs.InvalidArgument):
		return httpapi.WriteError(w, err)
	case !rollup.Settled(err):
		// Eventarc delivers it again (--retry): 503 with a short
		// Retry-After for what looks transient, 500 for the rest.
		if errs.Is(err, errs.Unavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			err = errs.Retryable(err, time.Second, "retry the event")
		}
		return httpapi.WriteError(w, err)
	case errs.Is(err, errs.NotFound):
		logging.FromContext(ctx).Warn("acknowledging an event of a deleted counter")
	case err != nil:
		logging.FromContext(ctx).Error("acknowledging an event whose counter cannot roll up", "error", err.Error())
	}
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent, nil
}
