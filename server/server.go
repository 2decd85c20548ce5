package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/doctor"
	"github.com/hitch-dev/hitch/internal/routes"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/web"
)

// Config configures a Server.
type Config struct {
	// Runtime drives the runs. Required.
	Runtime *hitch.Runtime
	// Store is the runtime's store, for listings. Required.
	Store store.Store
	// Agents are the agents clients may start, by name (the last version
	// given wins). Required.
	Agents []*hitch.Agent
	// Tokens are the bearer tokens accepted. Nil serves one implicit
	// local principal, an admin of the default tenant, without a token:
	// only for a loopback address (see CheckAddr).
	Tokens []Token
	// Limits bound requests and streams; zero fields take defaults.
	Limits Limits
	// Version is reported in the OpenAPI document.
	Version string
	// MCPCredential, when set, is the approver identity the MCP tools at
	// /mcp answer approval requests with; without it answer_approval is
	// refused there.
	MCPCredential *approval.Credential
	// Log receives errors the client is not told about. Default
	// io.Discard.
	Log io.Writer
	// NoConsole leaves out the web console (package web), which is
	// otherwise served at /.
	NoConsole bool
	// Metrics, when set, is served at /metrics (see telemetry.
	// PrometheusReader), to tokens of tenant default with role viewer or
	// more (metrics.go).
	Metrics http.Handler
	// Doctor is what GET /v1/doctor checks besides the store (package
	// doctor): the sandbox, the secrets, the MCP servers and the models
	// of the config; its Store, when nil, is the runtime's.
	Doctor doctor.Config
}

// Server is the HTTP API of a runtime.
type Server struct {
	cfg      Config
	agents   map[string]*hitch.Agent
	handler  http.Handler
	api      huma.API
	hub      *hub
	streams  *streamCounts
	stopping atomic.Bool
	stop     chan struct{} // closed when the server stops: streams end
	stopOnce sync.Once
	logMu    sync.Mutex
	mux      *routes.Mux  // the API's router
	console  *web.Console // nil with NoConsole
}

// Routes lists every route the server serves, as registered on its
// routers: the API's operations ("GET /v1/runs/{id}"), /mcp, /metrics and
// the console's pages and actions ("console: POST /runs/{id}/cancel").
func (s *Server) Routes() []string {
	out := s.mux.Patterns()
	if s.console != nil {
		for _, p := range s.console.Routes() {
			out = append(out, "console: "+p)
		}
	}
	return out
}

// New returns a server over the runtime. Wire its OnEvent into the
// runtime's Config.OnEvent (see Notify) so streams wake at once.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Runtime == nil:
		return nil, errors.New("new server: Config.Runtime is required")
	case cfg.Store == nil:
		return nil, errors.New("new server: Config.Store is required")
	case len(cfg.Agents) == 0:
		return nil, errors.New("new server: Config.Agents is empty: there is nothing to start")
	}
	cfg.Limits = cfg.Limits.WithDefaults()
	if err := cfg.Limits.validate(); err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	if err := checkTokens(cfg.Tokens); err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	s := &Server{cfg: cfg, agents: map[string]*hitch.Agent{}, hub: newHub(), streams: &streamCounts{n: map[string]int{}}, stop: make(chan struct{})}
	for _, a := range cfg.Agents {
		if a == nil {
			return nil, errors.New("new server: Config.Agents holds nil")
		}
		s.agents[a.Name()] = a
	}
	mux := routes.New()
	s.mux = mux
	hc := huma.DefaultConfig("hitch", cfg.Version)
	hc.CreateHooks = nil // no $schema links in bodies
	hc.OpenAPIPath = "/v1/openapi"
	hc.DocsPath = ""
	hc.SchemasPath = ""
	hc.Info.Description = "The HTTP API of hitch, a durable runtime for LLM agents. See docs/api.md."
	hc.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"bearer": {Type: "http", Scheme: "bearer", Description: "A token from the server's config; its role and tenant decide what it may see and do."},
	}
	hc.Security = []map[string][]string{{"bearer": {}}}
	s.api = humago.New(mux, hc)
	for _, r := range s.routes() {
		r.register(s.api, r.Operation)
	}
	s.documentCommonErrors()
	if err := s.mountMCP(mux); err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	s.mountMetrics(mux)
	var h http.Handler = mux
	h = s.withLimits(h)
	h = s.withAuth(h)
	h = withProblems(h)
	s.handler = h
	if !cfg.NoConsole {
		// The console (package web) is served at /, outside the bearer
		// check: it signs in with a token and calls h with it.
		con, err := web.New(web.Config{API: h})
		if err != nil {
			return nil, fmt.Errorf("new server: %w", err)
		}
		s.console = con
		ch := con.WithAPI()
		// /mcp and /metrics are the API's, beside the console.
		s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/mcp" || r.URL.Path == metricsPath {
				h.ServeHTTP(w, r)
				return
			}
			ch.ServeHTTP(w, r)
		})
	}
	// The door is checked once for every face: the console's own calls
	// to h come from inside and do not pass it again.
	s.handler = s.withEntry(s.handler)
	return s, nil
}

// documentCommonErrors adds to every operation the problems any route may
// answer with: a malformed body, no token, too large a body or header, a
// timeout.
func (s *Server) documentCommonErrors() {
	oa := s.api.OpenAPI()
	problem := oa.Components.Schemas.Schema(reflect.TypeOf(api.Problem{}), true, "")
	for _, item := range oa.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post} {
			if op == nil {
				continue
			}
			statuses := []int{http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusRequestEntityTooLarge,
				http.StatusRequestHeaderFieldsTooLarge, http.StatusUnsupportedMediaType, http.StatusMethodNotAllowed,
				http.StatusInternalServerError, http.StatusServiceUnavailable}
			if op.Security == nil {
				statuses = append(statuses, http.StatusUnauthorized, http.StatusForbidden)
			}
			for _, st := range statuses {
				key := strconv.Itoa(st)
				if op.Responses[key] != nil {
					continue
				}
				op.Responses[key] = &huma.Response{Description: http.StatusText(st),
					Content: map[string]*huma.MediaType{api.ProblemContentType: {Schema: problem}}}
			}
		}
	}
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Notify tells the server's event streams about a runtime event; pass it
// as (or call it from) the runtime's Config.OnEvent. It never blocks.
func (s *Server) Notify(e hitch.Event) {
	if e.RunID != "" && len(e.Entries) > 0 {
		s.hub.wake(hubKey(e.RunID))
	}
}

// OpenAPI returns the API's OpenAPI 3.1 document.
func (s *Server) OpenAPI() *huma.OpenAPI { return s.api.OpenAPI() }

func withProblems(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&problemWriter{ResponseWriter: w, r: r}, r)
	})
}

// withLimits bounds a request's body and, unless it is an event stream,
// its time.
func (s *Server) withLimits(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/") && !jsonBody(r) {
			writeProblem(w, r, api.NewProblem(api.TypeUnsupportedType, "send the body as Content-Type: application/json"))
			return
		}
		if r.ContentLength > s.cfg.Limits.MaxBodyBytes {
			writeProblem(w, r, api.NewProblem(api.TypeTooLarge, fmt.Sprintf("body of %d bytes: at most %d", r.ContentLength, s.cfg.Limits.MaxBodyBytes)))
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.cfg.Limits.MaxBodyBytes)
		}
		if !isStream(r) {
			ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Limits.RequestTimeout)
			defer cancel()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// fail maps an error to its problem, logging what the client is not told.
func (s *Server) fail(op string, err error) error {
	p := problemOf(err, op)
	var ie internalError
	if errors.As(p, &ie) {
		s.logMu.Lock()
		fmt.Fprintf(s.cfg.Log, "serve: %s: %v\n", op, err)
		s.logMu.Unlock()
		return api.NewProblem(api.TypeInternal, "internal error")
	}
	return p
}

// Serve serves the API on l until ctx ends, then stops gracefully: it
// stops accepting, ends every event stream cleanly (a client resumes
// elsewhere from its last event id), and waits for the requests in
// flight, at most for grace. The caller then drains the runtime.
func (s *Server) Serve(ctx context.Context, l net.Listener, grace time.Duration) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.cfg.Limits.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.Limits.RequestTimeout,
		WriteTimeout:      s.cfg.Limits.RequestTimeout + 5*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    headerHardCap * s.cfg.Limits.MaxHeaderBytes, // withEntry answers the limit itself
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.Stop()
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(sctx)
	if err != nil {
		_ = hs.Close()
	}
	<-errc
	if err != nil {
		return fmt.Errorf("serve: shut down: %w", err)
	}
	return nil
}

// Stop marks the server stopping: readyz fails, new streams and starts are
// refused, and open streams end after their current page.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.stopping.Store(true)
		close(s.stop)
	})
}

func (s *Server) healthz(context.Context, *struct{}) (*body[api.Health], error) {
	return &body[api.Health]{api.Health{Status: "ok"}}, nil
}

func (s *Server) readyz(ctx context.Context, _ *struct{}) (*body[api.Health], error) {
	if s.stopping.Load() {
		return nil, api.NewProblem(api.TypeUnavailable, "the server is stopping")
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := s.cfg.Store.Now(cctx); err != nil {
		return nil, api.NewProblem(api.TypeUnavailable, "the store does not answer")
	}
	return &body[api.Health]{api.Health{Status: "ok"}}, nil
}
