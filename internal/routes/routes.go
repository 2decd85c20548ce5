// Package routes is a router that remembers its routes: an http.ServeMux
// that keeps every pattern registered on it, so a server can list exactly
// what it serves and a test can walk it (a route that is not listed in the
// test's table fails the test).
package routes

import (
	"net/http"
	"slices"
	"sync"
)

// Mux is an http.ServeMux that remembers its patterns.
type Mux struct {
	*http.ServeMux
	mu       sync.Mutex
	patterns []string
}

// New returns an empty Mux.
func New() *Mux { return &Mux{ServeMux: http.NewServeMux()} }

// Handle registers h for pattern, as http.ServeMux.Handle does.
func (m *Mux) Handle(pattern string, h http.Handler) {
	m.remember(pattern)
	m.ServeMux.Handle(pattern, h)
}

// HandleFunc registers f for pattern, as http.ServeMux.HandleFunc does.
func (m *Mux) HandleFunc(pattern string, f func(http.ResponseWriter, *http.Request)) {
	m.remember(pattern)
	m.ServeMux.HandleFunc(pattern, f)
}

func (m *Mux) remember(pattern string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.patterns = append(m.patterns, pattern)
}

// Patterns returns every pattern registered, in order ("GET /v1/runs/{id}",
// or "/mcp" for every method).
func (m *Mux) Patterns() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.patterns)
}
