package server

import (
	"fmt"
	"net/http"

	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/internal/routes"
)

const metricsPath = "/metrics"

// mountMetrics serves Config.Metrics at /metrics, behind the bearer check.
//
// The figures are the node's and the store's, across tenants (runs by
// status, due runs, token use by model, cost by agent): like /mcp, they
// belong to the operator of the node, so a token of tenant default is
// needed, and viewer is enough, since a scrape changes nothing. A
// Prometheus server is given a viewer token of its own. Without
// server.tokens hitch serve listens on loopback only and every local
// request is that operator.
func (s *Server) mountMetrics(mux *routes.Mux) {
	if s.cfg.Metrics == nil {
		return
	}
	mux.Handle("GET "+metricsPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principalOf(r.Context())
		if p.Tenant != defaultTenant || !p.Role.Valid() {
			writeProblem(w, r, api.NewProblem(api.TypeForbidden,
				fmt.Sprintf("token %s is of tenant %s; /metrics serves tokens of tenant %s", p.Name, p.Tenant, defaultTenant)))
			return
		}
		s.cfg.Metrics.ServeHTTP(w, r)
	}))
}
