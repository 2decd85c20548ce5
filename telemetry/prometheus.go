package telemetry

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Prometheus returns a MeterProvider for Options.MeterProvider and the
// handler that serves what it records in the Prometheus text format, for a
// server to mount at /metrics. Metric names follow Prometheus' rules
// (gen_ai.client.token.usage is gen_ai_client_token_usage_bucket and so
// on). The handler reads its own registry, not the global one.
func Prometheus() (metric.MeterProvider, http.Handler, error) {
	r, h, err := PrometheusReader()
	if err != nil {
		return nil, nil, err
	}
	return sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)), h, nil
}

// PrometheusReader returns a metric reader, for Options.MetricReaders or a
// MeterProvider of one's own, and the handler that serves what it reads
// in the Prometheus text format, from its own registry. Each request
// collects once: observable gauges (see Metrics) are read then.
func PrometheusReader() (sdkmetric.Reader, http.Handler, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	return exp, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}
