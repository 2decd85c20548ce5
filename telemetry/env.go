package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// MetricInterval is how often metrics are exported over OTLP.
const MetricInterval = 30 * time.Second

// Enabled reports whether the standard OTEL_* variables ask for an OTLP
// export of traces or metrics. With none set, a program should not build a
// Telemetry at all: nothing is drawn and nothing costs.
func Enabled(getenv func(string) string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	return tracesWanted(getenv) || metricsWanted(getenv)
}

func endpointSet(getenv func(string) string, signal string) bool {
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
}

func tracesWanted(getenv func(string) string) bool {
	e := getenv("OTEL_TRACES_EXPORTER")
	return e != "none" && (endpointSet(getenv, "TRACES") || e == "otlp")
}

func metricsWanted(getenv func(string) string) bool {
	e := getenv("OTEL_METRICS_EXPORTER")
	return e != "none" && (endpointSet(getenv, "METRICS") || e == "otlp")
}

// FromEnv builds a Telemetry whose exporters are configured by the
// standard OTEL_* variables (OTEL_EXPORTER_OTLP_ENDPOINT and its
// per-signal forms, _HEADERS, _TIMEOUT, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_EXPORTER and OTEL_METRICS_EXPORTER
// set to none), over OTLP/HTTP with protobuf. It returns nil and no error
// when the variables ask for no export. opts.Exporter and
// opts.MeterProvider are set here; Shutdown stops both.
func FromEnv(ctx context.Context, opts Options) (*Telemetry, error) {
	getenv := os.Getenv
	if !Enabled(getenv) {
		return nil, nil
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"} {
		if p := getenv(k); p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("telemetry: %s=%s: only http/protobuf is supported", k, p)
		}
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(serviceName(getenv))))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	opts.Resource = res
	var shut []func(context.Context) error
	if tracesWanted(getenv) {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("telemetry: trace exporter: %w", err)
		}
		opts.Exporter = exp
	}
	if metricsWanted(getenv) {
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("telemetry: metric exporter: %w", err)
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(MetricInterval))))
		opts.MeterProvider = mp
		shut = append(shut, mp.Shutdown)
	}
	t, err := New(opts)
	if err != nil {
		return nil, err
	}
	t.shutdown = shut
	return t, nil
}

// serviceName is OTEL_SERVICE_NAME, or hitch.
func serviceName(getenv func(string) string) string {
	if s := getenv("OTEL_SERVICE_NAME"); s != "" {
		return s
	}
	return "hitch"
}
