package client

import (
	"context"
	"net/http"

	"github.com/hitch-dev/hitch/api"
)

// Budget returns what bounds a run and what is left: its family's budget
// and its own limits. An amount that is not known is nil, never 0.
func (c *Client) Budget(ctx context.Context, runID string) (api.RunBudget, error) {
	return doJSON[api.RunBudget](ctx, c, "budget of "+runID, http.MethodGet, "/v1/runs/"+esc(runID)+"/budget", nil, nil)
}

// FamilyUsage returns what the family of the root run rootID has used,
// summed from its runs' outcomes. A counter that is not known is nil.
func (c *Client) FamilyUsage(ctx context.Context, rootID string) (api.FamilyUsage, error) {
	return doJSON[api.FamilyUsage](ctx, c, "family usage of "+rootID, http.MethodGet, "/v1/runs/"+esc(rootID)+"/family/usage", nil, nil)
}

// Waits lists what a parked run waits on, and until when; empty for a run
// that does not wait.
func (c *Client) Waits(ctx context.Context, runID string) (api.RunWaits, error) {
	return doJSON[api.RunWaits](ctx, c, "waits of "+runID, http.MethodGet, "/v1/runs/"+esc(runID)+"/waits", nil, nil)
}
