package server

import (
	"context"
	"fmt"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// The runtime's seam for tenants. The root package does not keep a
// tenant on runs in this build: every run belongs to the default tenant,
// a token of another tenant sees none of them, and starting a run for
// another tenant is refused rather than filed under the default one.

// defaultTenant is the tenant of every run in this build, and of the
// implicit local principal.
const defaultTenant = "default"

// runTenant is the tenant a run belongs to.
func runTenant(hitch.Run) string { return defaultTenant }

// startOptions are the start options that file a run under tenant.
func startOptions(tenant string) ([]hitch.StartOption, error) {
	if tenant != defaultTenant {
		return nil, fmt.Errorf("tenant %q: this build keeps runs of tenant %q only", tenant, defaultTenant)
	}
	return nil, nil
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
}

// listRuns lists a tenant's runs, newest first, one page at a time.
func (s *Server) listRuns(ctx context.Context, p runsParams) ([]hitch.Run, string, error) {
	if p.tenant != defaultTenant || p.after != "" {
		// The store pages runs by count only in this build: there is
		// no page after the first.
		return nil, "", nil
	}
	rows, err := s.cfg.Store.RunList(ctx, store.RunListParams{Statuses: p.statuses, ParentID: p.parentID, RootID: p.rootID, Limit: p.limit})
	if err != nil {
		return nil, "", err
	}
	out := make([]hitch.Run, 0, len(rows))
	for _, r := range rows {
		if p.agent != "" && r.Agent != p.agent {
			continue
		}
		run, err := hitch.RunOf(r)
		if err != nil {
			return nil, "", err
		}
		out = append(out, run)
	}
	return out, "", nil
}

// approvalTenant is the tenant of a pending approval's run.
func approvalTenant(hitch.PendingApproval) string { return defaultTenant }
