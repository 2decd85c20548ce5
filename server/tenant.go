package server

import (
	"context"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
)

// The runtime's seam for tenants: every run belongs to one (hitch.Run's
// Tenant), a token sees only its tenant's runs, and a run a token starts is
// filed under the token's tenant.

// defaultTenant is the tenant of the implicit local principal.
const defaultTenant = hitchtype.DefaultTenant

// runTenant is the tenant a run belongs to.
func runTenant(r hitch.Run) string { return r.Tenant }

// startOptions are the start options that file a run under tenant.
func startOptions(tenant string) ([]hitch.StartOption, error) {
	if err := hitchtype.CheckTenant(tenant); err != nil {
		return nil, err
	}
	return []hitch.StartOption{hitch.WithTenant(tenant)}, nil
}

// runsParams filter a listing of runs.
type runsParams struct {
	tenant   string
	statuses []hitchtype.Status
	agent    string
	parentID string
	rootID   string
	after    string
	limit    int
	// createdAfter, createdBefore and text: see hitch.RunsParams.
	createdAfter, createdBefore time.Time
	text                        string
	reasons                     []string
}

// listRuns lists a tenant's runs, newest first, one page at a time.
func (s *Server) listRuns(ctx context.Context, p runsParams) ([]hitch.Run, string, error) {
	return s.cfg.Runtime.Runs(ctx, hitch.RunsParams{Tenant: p.tenant, Statuses: p.statuses, Agent: p.agent,
		ParentID: p.parentID, RootID: p.rootID, After: p.after, Limit: p.limit,
		CreatedAfter: p.createdAfter, CreatedBefore: p.createdBefore, Text: p.text, Reasons: p.reasons})
}
