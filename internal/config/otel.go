package config

// otelSettings are OpenTelemetry's own variables (internal/telemetry
// reads them through the SDK), declared so the deploy passes them on and
// the settings table lists them.
var otelSettings = []Setting{
	otel("OTEL_EXPORTER_OTLP_ENDPOINT", "Where traces and metrics go, over OTLP/HTTP (`https://telemetry.googleapis.com` on Google Cloud); set, it turns telemetry on. See docs/operations/observability.md."),
	otel("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "The traces' OTLP endpoint, when it differs (set alone: traces only)."),
	otel("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "The metrics' OTLP endpoint, when it differs (set alone: metrics only)."),
	{"OTEL_EXPORTER_OTLP_HEADERS", "", "Headers of every export (`key=value,…`), for a backend that wants a key: deployed, the name of the Secret Manager secret holding them (the deploy passes it with --set-secrets, never as a value).", Secret,
		func(*Config, string) error { return nil }},
	otel("OTEL_SDK_DISABLED", "`true` turns telemetry off, whatever else is set."),
	otel("OTEL_TRACES_EXPORTER", "`otlp` exports traces (to the default endpoint when none is set); `none` exports none, whatever endpoint is set."),
	otel("OTEL_METRICS_EXPORTER", "`otlp` exports metrics (to the default endpoint when none is set); `none` exports none, whatever endpoint is set."),
	otel("OTEL_SPAN_LINK_COUNT_LIMIT", "Links a span keeps (default 128): a group commit's flush links the sampled requests it carried."),
	otel("OTEL_TRACES_SAMPLER", "Sampler of new traces (default `parentbased_always_on`)."),
	otel("OTEL_TRACES_SAMPLER_ARG", "Its argument, such as `0.1` for `parentbased_traceidratio`."),
	otel("OTEL_METRIC_EXPORT_INTERVAL", "Milliseconds between metric exports (default 60000)."),
	otel("OTEL_BSP_SCHEDULE_DELAY", "Milliseconds between span exports (default 5000)."),
	otel("OTEL_RESOURCE_ATTRIBUTES", "Extra resource attributes (`key=value,…`)."),
	otel("OTEL_SERVICE_NAME", "The service name of the exports (default: the function's name)."),
}

// otel declares one of OpenTelemetry's standard variables: deployed as
// given, read by its SDK.
func otel(name, meaning string) Setting {
	return Setting{name, "", meaning, Deployed, func(*Config, string) error { return nil }}
}
