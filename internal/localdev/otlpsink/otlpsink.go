// Package otlpsink is a local OTLP/HTTP receiver: what scripts/dev.sh
// points OTEL_EXPORTER_OTLP_ENDPOINT at (cmd/devserver serves it, and the
// metrics page reads it), and what the telemetry tests read spans and
// metrics from. It keeps the recent spans and the latest point of every
// metric stream, in memory, bounded.
package otlpsink

import (
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"sync"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	metrics "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// maxSpans bounds the spans kept; the oldest go first.
const maxSpans = 20_000

// maxBody bounds one export request; maxStreams the metric streams kept
// (names × instances).
const (
	maxBody    = 4 << 20
	maxStreams = 10_000
)

// Span is an exported span, its ids in hex.
type Span struct {
	Name, TraceID, SpanID, ParentSpanID string
	Links                               []Link
	Attributes                          map[string]string
}

// Link is a span's link to another span.
type Link struct{ TraceID, SpanID string }

// Metric is what a metric's streams hold now, summed over its streams
// (instances, attributes): a counter's total, a histogram's count, sum
// and buckets.
type Metric struct {
	Value   float64   `json:"value,omitempty"` // a sum or gauge
	Count   uint64    `json:"count,omitempty"` // a histogram
	Sum     float64   `json:"sum,omitempty"`
	Bounds  []float64 `json:"bounds,omitempty"`
	Buckets []uint64  `json:"buckets,omitempty"`
	// ByAttribute is Value, or Count, by each attribute's value: "code=429".
	ByAttribute map[string]float64 `json:"by_attribute,omitempty"`
}

// Sink receives exports; its zero value is ready.
type Sink struct {
	mu      sync.Mutex
	spans   []Span
	streams map[string]map[string]*metrics.Metric // metric name → stream key → its latest export
}

// ServeHTTP takes POST /v1/traces and /v1/metrics (protobuf).
func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The exporters' content type; a web page cannot send it without a
	// preflight, which nothing here answers.
	if r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "OTLP/HTTP protobuf only", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil || r.Method != http.MethodPost {
		http.Error(w, "POST a protobuf export", http.StatusBadRequest)
		return
	}
	var reply proto.Message
	switch r.URL.Path {
	case "/v1/traces":
		var req colltrace.ExportTraceServiceRequest
		if err = proto.Unmarshal(body, &req); err == nil {
			s.addSpans(&req)
		}
		reply = &colltrace.ExportTraceServiceResponse{}
	case "/v1/metrics":
		var req collmetrics.ExportMetricsServiceRequest
		if err = proto.Unmarshal(body, &req); err == nil {
			s.addMetrics(&req)
		}
		reply = &collmetrics.ExportMetricsServiceResponse{}
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b, _ := proto.Marshal(reply)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(b)
}

func (s *Sink) addSpans(req *colltrace.ExportTraceServiceRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				span := Span{Name: sp.GetName(), TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
					ParentSpanID: hex.EncodeToString(sp.GetParentSpanId()), Attributes: attrs(sp.GetAttributes())}
				for _, l := range sp.GetLinks() {
					span.Links = append(span.Links, Link{TraceID: hex.EncodeToString(l.GetTraceId()), SpanID: hex.EncodeToString(l.GetSpanId())})
				}
				s.spans = append(s.spans, span)
				if len(s.spans) >= 2*maxSpans {
					s.spans = append([]Span(nil), s.spans[maxSpans:]...) // the oldest go
				}
			}
		}
	}
}

func (s *Sink) addMetrics(req *collmetrics.ExportMetricsServiceRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streams == nil {
		s.streams = map[string]map[string]*metrics.Metric{}
	}
	for _, rm := range req.GetResourceMetrics() {
		resource := key(rm.GetResource().GetAttributes())
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				if s.streams[m.GetName()] == nil && len(s.streams) >= maxStreams {
					continue
				}
				if s.streams[m.GetName()] == nil {
					s.streams[m.GetName()] = map[string]*metrics.Metric{}
				}
				// Cumulative points: the latest export of an instance's
				// metric replaces its previous one.
				if len(s.streams[m.GetName()]) < maxStreams || s.streams[m.GetName()][resource] != nil {
					s.streams[m.GetName()][resource] = m
				}
			}
		}
	}
}

// Spans returns the spans received so far.
func (s *Sink) Spans() []Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Span(nil), s.spans...)
}

// Metrics returns every metric received, summed over its streams.
func (s *Sink) Metrics() map[string]Metric {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]Metric{}
	for name, byResource := range s.streams {
		var m Metric
		for _, exported := range byResource {
			merge(&m, exported)
		}
		out[name] = m
	}
	return out
}

// merge adds an instance's points of a metric to m.
func merge(m *Metric, exported *metrics.Metric) {
	add := func(attributes []*common.KeyValue, v float64) {
		for k, val := range attrs(attributes) {
			if m.ByAttribute == nil {
				m.ByAttribute = map[string]float64{}
			}
			m.ByAttribute[k+"="+val] += v
		}
	}
	for _, p := range exported.GetSum().GetDataPoints() {
		v := p.GetAsDouble() + float64(p.GetAsInt())
		m.Value += v
		add(p.GetAttributes(), v)
	}
	for _, p := range exported.GetGauge().GetDataPoints() {
		m.Value += p.GetAsDouble() + float64(p.GetAsInt())
	}
	for _, p := range exported.GetHistogram().GetDataPoints() {
		m.Count += p.GetCount()
		m.Sum += p.GetSum()
		add(p.GetAttributes(), float64(p.GetCount()))
		if m.Bounds == nil {
			m.Bounds, m.Buckets = p.GetExplicitBounds(), make([]uint64, len(p.GetBucketCounts()))
		}
		for i, c := range p.GetBucketCounts() {
			if i < len(m.Buckets) {
				m.Buckets[i] += c
			}
		}
	}
}

// attrs renders attributes as strings.
func attrs(kvs []*common.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		if s, ok := v.GetValue().(*common.AnyValue_StringValue); ok {
			out[kv.GetKey()] = s.StringValue
		} else {
			out[kv.GetKey()] = protoText(v)
		}
	}
	return out
}

// protoText renders a non-string attribute value.
func protoText(v *common.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *common.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *common.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	}
	return ""
}

// key identifies a stream's resource (an instance).
func key(kvs []*common.KeyValue) string {
	a := attrs(kvs)
	return a["service.name"] + "/" + a["service.instance.id"]
}
