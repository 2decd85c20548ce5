// Package otlptest is an OTLP collector stand-in for tests: a gRPC server
// on loopback that implements the collector's trace and metrics services
// and keeps what it receives, and the raw bytes of every export, so a test
// can check span trees and search for text that must not be there.
package otlptest

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// MaxRaw bounds the raw export bytes a Receiver keeps.
const MaxRaw = 64 << 20

// Receiver accepts OTLP exports over gRPC.
type Receiver struct {
	srv  *grpc.Server
	addr string

	mu      sync.Mutex
	spans   []*tracepb.Span
	metrics []string // metric names, one per data set received
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
	r := &Receiver{srv: grpc.NewServer(), addr: ln.Addr().String()}
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
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.keep(req)
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			s.r.spans = append(s.r.spans, ss.Spans...)
		}
	}
	return &coltrace.ExportTraceServiceResponse{}, nil
}

type metrics struct {
	colmetrics.UnimplementedMetricsServiceServer
	r *Receiver
}

func (s metrics) Export(_ context.Context, req *colmetrics.ExportMetricsServiceRequest) (*colmetrics.ExportMetricsServiceResponse, error) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.keep(req)
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				s.r.metrics = append(s.r.metrics, m.Name)
			}
		}
	}
	return &colmetrics.ExportMetricsServiceResponse{}, nil
}
