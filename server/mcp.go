package server

import (
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/server/mcpserver"
)

// mountMCP serves the runtime's MCP tools (package mcpserver) at /mcp
// over streamable HTTP, stateless: every request stands alone and
// answers with JSON, so no session state is kept between requests. The
// bearer auth is the API's. The MCP tools read and list runs without
// regard to tenants, so only admins of the default tenant may use them.
func (s *Server) mountMCP(mux *http.ServeMux) error {
	ms, err := mcpserver.New(mcpserver.Options{Runtime: s.cfg.Runtime, Agents: s.cfg.Agents,
		Credential: s.cfg.MCPCredential, MaxWait: s.cfg.Limits.MaxWait, Version: s.cfg.Version})
	if err != nil {
		return err
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, MaxRequestBodyBytes: s.cfg.Limits.MaxBodyBytes,
	})
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principalOf(r.Context())
		if p.role != api.RoleAdmin || p.tenant != defaultTenant {
			writeProblem(w, r, api.NewProblem(api.TypeForbidden,
				fmt.Sprintf("token %s: /mcp serves admins of tenant %s only", p.name, defaultTenant)))
			return
		}
		if s.stopping.Load() {
			writeProblem(w, r, api.NewProblem(api.TypeUnavailable, "the server is stopping"))
			return
		}
		h.ServeHTTP(w, r)
	}))
	return nil
}
