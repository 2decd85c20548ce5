package modeltest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
)

// Exchange is the scripted answer to one request.
type Exchange struct {
	// Status is the HTTP status. Default 200.
	Status int
	// Header holds extra response headers, such as retry-after.
	Header map[string]string
	// ContentType defaults to text/event-stream for a 200 and
	// application/json otherwise.
	ContentType string
	// Body is sent as it is.
	Body string
	// CutAfter, when above zero, sends only the first CutAfter bytes of
	// Body and then drops the connection, as a failing network would.
	CutAfter int
	// Hold keeps the response open after Body until the client goes away,
	// as a slow model would.
	Hold bool
	// Handler, when set, answers instead of the fields above.
	Handler http.HandlerFunc
}

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// Server is a fake provider endpoint. Each request takes the next
// exchange; a request beyond the script fails the test.
type Server struct {
	// URL is the server's root, without a trailing slash.
	URL string

	t       testing.TB
	srv     *httptest.Server
	closing chan struct{}

	mu        sync.Mutex
	exchanges []Exchange
	requests  []Request
}

// NewServer starts a server that plays exchanges in order. It is closed
// when the test ends.
func NewServer(t testing.TB, exchanges ...Exchange) *Server {
	t.Helper()
	s := &Server{t: t, exchanges: exchanges, closing: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(func() {
		close(s.closing)
		s.srv.Close()
	})
	return s
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	n := len(s.requests)
	var ex Exchange
	ok := n <= len(s.exchanges)
	if ok {
		ex = s.exchanges[n-1]
	}
	s.mu.Unlock()
	if !ok {
		s.t.Errorf("modeltest: unexpected request %d (%s %s); the script has %d", n, r.Method, r.URL.Path, len(s.exchanges))
		http.Error(w, `{"error":{"message":"unexpected request","type":"test_error"}}`, http.StatusTeapot)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if ex.Handler != nil {
		ex.Handler(w, r)
		return
	}
	status := ex.Status
	if status == 0 {
		status = http.StatusOK
	}
	ct := ex.ContentType
	if ct == "" {
		ct = "application/json"
		if status == http.StatusOK {
			ct = "text/event-stream"
		}
	}
	w.Header().Set("Content-Type", ct)
	for k, v := range ex.Header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	out := ex.Body
	if ex.CutAfter > 0 && ex.CutAfter < len(out) {
		out = out[:ex.CutAfter]
	}
	_, _ = io.WriteString(w, out)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	switch {
	case ex.CutAfter > 0:
		// Dropping the connection mid-body: the client sees an unexpected EOF.
		panic(http.ErrAbortHandler)
	case ex.Hold:
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
	}
}

// Fixture reads a file, typically a recorded exchange under testdata.
func Fixture(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return string(b)
}

// Cut returns the length of body up to and including the first occurrence
// of marker, for Exchange.CutAfter: the stream is dropped right after it.
func Cut(t testing.TB, body, marker string) int {
	t.Helper()
	i := strings.Index(body, marker)
	if i < 0 {
		t.Fatalf("cut marker %q not in body", marker)
	}
	return i + len(marker)
}
