package server

import (
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/internal/routes"
	"github.com/hitch-dev/hitch/server/mcpserver"
)

// mountMCP serves the runtime's MCP tools (package mcpserver) at /mcp
// over streamable HTTP, stateless: every request stands alone and
// answers with JSON, so no session state is kept between requests. The
// bearer auth is the API's, and so is the gate: each principal gets the
// tools over its own view of the runtime (hitch.Scope), scoped to its
// tenant and role exactly as /v1 is.
func (s *Server) mountMCP(mux *routes.Mux) error {
	var mu sync.Mutex
	servers := map[hitch.Principal]*mcp.Server{}
	serverFor := func(p hitch.Principal) (*mcp.Server, error) {
		mu.Lock()
		defer mu.Unlock()
		if ms := servers[p]; ms != nil {
			return ms, nil
		}
		ms, err := mcpserver.New(mcpserver.Options{Scope: s.cfg.Runtime.As(p), Agents: s.cfg.Agents,
			Credential: s.cfg.MCPCredential, MaxWait: s.cfg.Limits.MaxWait, Version: s.cfg.Version})
		if err != nil {
			return nil, err
		}
		servers[p] = ms // principals are the config's tokens: a bounded set
		return ms, nil
	}
	// Built once up front, so a config the tools refuse fails New.
	if _, err := serverFor(localPrincipal); err != nil {
		return err
	}
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		ms, _ := serverFor(principalOf(r.Context()))
		return ms
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, MaxRequestBodyBytes: s.cfg.Limits.MaxBodyBytes})
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.stopping.Load() {
			writeProblem(w, r, api.NewProblem(api.TypeUnavailable, "the server is stopping"))
			return
		}
		h.ServeHTTP(w, r)
	}))
	return nil
}
