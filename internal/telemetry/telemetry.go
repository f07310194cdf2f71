// Package telemetry turns OpenTelemetry on, the standard way: the SDK's
// tracer and meter providers, exporting over OTLP/HTTP, configured by the
// standard OTEL_* variables. It is off unless an OTLP endpoint is set
// (OTEL_EXPORTER_OTLP_ENDPOINT, or its _TRACES_ or _METRICS_ form) or an
// exporter is named (OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER = otlp),
// and OTEL_SDK_DISABLED=true turns it off whatever else is set. Off, the
// global providers stay OpenTelemetry's no-ops: every span and instrument
// in the code costs a call that does nothing.
//
// On Google Cloud, point OTEL_EXPORTER_OTLP_ENDPOINT at
// https://telemetry.googleapis.com: Google's OTLP endpoint takes traces
// into Cloud Trace and metrics into Cloud Monitoring, and Setup then signs
// the exports with the function's service account (Application Default
// Credentials). docs/operations/observability.md says why this and not the
// older Google exporters.
package telemetry

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/contrib/detectors/gcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"golang.org/x/oauth2/google"
)

// Enabled reports whether getenv asks for telemetry.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	return wants(getenv, "TRACES") || wants(getenv, "METRICS")
}

// googleEndpoint is Google Cloud's OTLP endpoint, which wants OAuth.
const googleEndpoint = "telemetry.googleapis.com"

// Setup installs the providers and the propagators (W3C traceparent, and
// X-Cloud-Trace-Context for what Google's front ends send) when getenv
// asks for telemetry, for service (the function's name). shutdown flushes
// what is buffered; off, it does nothing.
func Setup(ctx context.Context, service string, getenv func(string) string) (shutdown func(context.Context) error, err error) {
	nothing := func(context.Context) error { return nil }
	if !Enabled(getenv) {
		return nothing, nil
	}
	var traceOpts []otlptracehttp.Option
	var metricOpts []otlpmetrichttp.Option
	// Google's endpoint wants the service account's token; no other host
	// ever gets it.
	signed := func(signal string) (bool, error) {
		return isGoogle(cmp.Or(getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT"), getenv("OTEL_EXPORTER_OTLP_ENDPOINT")))
	}
	if ok, err := signed("TRACES"); err != nil {
		return nothing, err
	} else if ok {
		client, err := google.DefaultClient(ctx, "https://www.googleapis.com/auth/cloud-platform")
		if err != nil {
			return nothing, err
		}
		traceOpts = append(traceOpts, otlptracehttp.WithHTTPClient(client))
	}
	if ok, err := signed("METRICS"); err != nil {
		return nothing, err
	} else if ok {
		client, err := google.DefaultClient(ctx, "https://www.googleapis.com/auth/cloud-platform")
		if err != nil {
			return nothing, err
		}
		metricOpts = append(metricOpts, otlpmetrichttp.WithHTTPClient(client))
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithDetectors(gcp.NewDetector()),
		resource.WithAttributes(
			attribute.String("service.name", cmp.Or(getenv("OTEL_SERVICE_NAME"), service)),
			// Every instance exports its own cumulative series.
			attribute.String("service.instance.id", rand.Text()),
			attribute.String("gcp.project_id", getenv("GOOGLE_CLOUD_PROJECT"))))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nothing, err
	}
	var shutdowns []func(context.Context) error
	if wants(getenv, "TRACES") {
		traces, err := otlptracehttp.New(ctx, traceOpts...)
		if err != nil {
			return nothing, err
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(traces), sdktrace.WithResource(res))
		otel.SetTracerProvider(tp)
		shutdowns = append(shutdowns, tp.Shutdown)
	}
	if wants(getenv, "METRICS") {
		metrics, err := otlpmetrichttp.New(ctx, metricOpts...)
		if err != nil {
			return nothing, err
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)), sdkmetric.WithResource(res))
		otel.SetMeterProvider(mp)
		shutdowns = append(shutdowns, mp.Shutdown)
	}
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(CloudTraceContext{}, propagation.TraceContext{}))
	return func(ctx context.Context) error {
		var errs []error
		for _, s := range shutdowns {
			errs = append(errs, s(ctx))
		}
		return errors.Join(errs...)
	}, nil
}

// wants reports whether signal (TRACES or METRICS) is exported: the
// common endpoint, its own, or its exporter named otlp; not when only the
// other signal's endpoint or exporter is set, nor when its exporter is
// none.
func wants(getenv func(string) string, signal string) bool {
	switch getenv("OTEL_" + signal + "_EXPORTER") {
	case "none":
		return false
	case "otlp":
		return true
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
}

// isGoogle reports whether endpoint is Google Cloud's OTLP endpoint.
func isGoogle(endpoint string) (bool, error) {
	if endpoint == "" {
		return false, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return false, fmt.Errorf("telemetry: the OTLP endpoint %q: %w", endpoint, err)
	}
	return u.Hostname() == googleEndpoint, nil
}
