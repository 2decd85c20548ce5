// Package otlptest is an OTLP collector stand-in for tests: a server on
// loopback, over gRPC or HTTP, that implements the collector's trace and
// metrics services and keeps what it receives, and the raw bytes of every
// export, so a test can check span trees and metrics and search for text
// that must not be there.
package otlptest

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// MaxRaw bounds the raw export bytes a Receiver keeps.
const MaxRaw = 64 << 20

// MaxBody bounds one export a Receiver takes over HTTP.
const MaxBody = 16 << 20

// Receiver accepts OTLP exports over gRPC or HTTP.
type Receiver struct {
	srv  *grpc.Server
	addr string

	mu      sync.Mutex
	spans   []*tracepb.Span
	metrics []string                    // metric names, one per data set received
	last    map[string]*metricpb.Metric // each metric's last data set
	raw     bytes.Buffer
}

// StartGRPC serves the collector's trace and metrics services on a free
// loopback port until the test ends.
func StartGRPC(t testing.TB) *Receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{srv: grpc.NewServer(), addr: ln.Addr().String(), last: map[string]*metricpb.Metric{}}
	coltrace.RegisterTraceServiceServer(r.srv, traces{r: r})
	colmetrics.RegisterMetricsServiceServer(r.srv, metrics{r: r})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.srv.Serve(ln)
	}()
	t.Cleanup(func() {
		r.srv.Stop()
		<-done
	})
	return r
}

// StartHTTP serves OTLP/HTTP (protobuf) on a free loopback port until the
// test ends; its URL is the base of the /v1/traces and /v1/metrics
// endpoints.
func StartHTTP(t testing.TB) (*Receiver, *httptest.Server) {
	t.Helper()
	r := &Receiver{last: map[string]*metricpb.Metric{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var in, out proto.Message
		switch req.URL.Path {
		case "/v1/traces":
			in, out = &coltrace.ExportTraceServiceRequest{}, &coltrace.ExportTraceServiceResponse{}
		case "/v1/metrics":
			in, out = &colmetrics.ExportMetricsServiceRequest{}, &colmetrics.ExportMetricsServiceResponse{}
		default:
			http.NotFound(w, req)
			return
		}
		body, err := io.ReadAll(io.LimitReader(req.Body, MaxBody))
		if err == nil {
			err = proto.Unmarshal(body, in)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if ex, ok := in.(*coltrace.ExportTraceServiceRequest); ok {
			r.addTraces(ex)
		} else {
			r.addMetrics(in.(*colmetrics.ExportMetricsServiceRequest))
		}
		b, _ := proto.Marshal(out)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return r, srv
}

// Endpoint is the receiver's address as OTEL_EXPORTER_OTLP_ENDPOINT takes
// it for gRPC: http:// (no TLS) and host:port.
func (r *Receiver) Endpoint() string { return "http://" + r.addr }

// Spans are the spans received so far.
func (r *Receiver) Spans() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...)
}

// Metrics are the names of the metrics received so far, once per export.
func (r *Receiver) Metrics() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.metrics...)
}

// Last is the last data set received of the metric name (exports are
// cumulative), or nil.
func (r *Receiver) Last(name string) *metricpb.Metric {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[name]
}

// Raw is every export received so far, as its protobuf bytes.
func (r *Receiver) Raw() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.raw.Bytes())
}

func (r *Receiver) keep(m proto.Message) {
	b, _ := proto.Marshal(m)
	if r.raw.Len()+len(b) <= MaxRaw {
		r.raw.Write(b)
	}
}

type traces struct {
	coltrace.UnimplementedTraceServiceServer
	r *Receiver
}

func (s traces) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	s.r.addTraces(req)
	return &coltrace.ExportTraceServiceResponse{}, nil
}

func (r *Receiver) addTraces(req *coltrace.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keep(req)
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
}

type metrics struct {
	colmetrics.UnimplementedMetricsServiceServer
	r *Receiver
}

func (s metrics) Export(_ context.Context, req *colmetrics.ExportMetricsServiceRequest) (*colmetrics.ExportMetricsServiceResponse, error) {
	s.r.addMetrics(req)
	return &colmetrics.ExportMetricsServiceResponse{}, nil
}

func (r *Receiver) addMetrics(req *colmetrics.ExportMetricsServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keep(req)
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				r.metrics = append(r.metrics, m.Name)
				r.last[m.Name] = m
			}
		}
	}
}
