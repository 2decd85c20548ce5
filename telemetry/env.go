package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
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
// set to none), over OTLP/HTTP with protobuf, or over gRPC when
// OTEL_EXPORTER_OTLP_PROTOCOL (or its per-signal form) is grpc. It returns
// nil and no error when the variables ask for no export.
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true sets
// opts.Content. opts.Exporter and opts.MeterProvider are set here;
// Shutdown stops both.
func FromEnv(ctx context.Context, opts Options) (*Telemetry, error) {
	getenv := os.Getenv
	if !Enabled(getenv) {
		if len(opts.MetricReaders) == 0 {
			return nil, nil
		}
		getenv = func(string) string { return "" } // the readers only: nothing is exported
	}
	traceProto, err := protocol(getenv, "TRACES")
	if err != nil {
		return nil, err
	}
	metricProto, err := protocol(getenv, "METRICS")
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(serviceName(getenv))))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	opts.Resource = res
	if v := getenv(envContent); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("telemetry: %s=%q: want true or false", envContent, v)
		}
		opts.Content = opts.Content || on
	}
	var shut []func(context.Context) error
	if tracesWanted(getenv) {
		var exp sdktrace.SpanExporter
		if traceProto == protoGRPC {
			exp, err = otlptracegrpc.New(ctx)
		} else {
			exp, err = otlptracehttp.New(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("telemetry: trace exporter: %w", err)
		}
		opts.Exporter = exp
	}
	readers := opts.MetricReaders
	if metricsWanted(getenv) {
		var exp sdkmetric.Exporter
		if metricProto == protoGRPC {
			exp, err = otlpmetricgrpc.New(ctx)
		} else {
			exp, err = otlpmetrichttp.New(ctx)
		}
		if err != nil {
			if opts.Exporter != nil {
				_ = opts.Exporter.Shutdown(ctx) // built above, never used
			}
			return nil, fmt.Errorf("telemetry: metric exporter: %w", err)
		}
		readers = append(readers, sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(MetricInterval)))
	}
	if len(readers) > 0 {
		mpOpts := []sdkmetric.Option{sdkmetric.WithResource(res)}
		for _, r := range readers {
			mpOpts = append(mpOpts, sdkmetric.WithReader(r))
		}
		mp := sdkmetric.NewMeterProvider(mpOpts...)
		opts.MeterProvider = mp
		shut = append(shut, mp.Shutdown)
	}
	t, err := New(opts)
	if err != nil {
		if opts.Exporter != nil {
			shut = append(shut, opts.Exporter.Shutdown)
		}
		for _, f := range shut {
			_ = f(ctx)
		}
		return nil, err
	}
	t.shutdown = shut
	return t, nil
}

// envContent turns on recording model and tool text (Options.Content), as
// the GenAI instrumentations of other languages read it.
const envContent = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// The OTLP transports FromEnv builds.
const (
	protoHTTP = "http/protobuf"
	protoGRPC = "grpc"
)

// protocol is the OTLP transport of a signal (TRACES or METRICS): its own
// OTEL_EXPORTER_OTLP_<signal>_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// else http/protobuf. http/json is refused, naming the variable.
func protocol(getenv func(string) string, signal string) (string, error) {
	key := "OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"
	p := getenv(key)
	if p == "" {
		key = "OTEL_EXPORTER_OTLP_PROTOCOL"
		p = getenv(key)
	}
	switch p {
	case "", protoHTTP:
		return protoHTTP, nil
	case protoGRPC:
		return protoGRPC, nil
	}
	return "", fmt.Errorf("telemetry: %s=%q: want grpc or http/protobuf", key, p)
}

// serviceName is OTEL_SERVICE_NAME, or hitch.
func serviceName(getenv func(string) string) string {
	if s := getenv("OTEL_SERVICE_NAME"); s != "" {
		return s
	}
	return "hitch"
}
