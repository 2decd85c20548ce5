package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/hitch-dev/hitch/api"
)

// RunContext returns where a run's latest model requests put their
// tokens (at most limit, 1 to 100; 0 is 100), with the provider's usage,
// and what the run's family has cost so far.
func (c *Client) RunContext(ctx context.Context, id string, limit int) (api.RunContext, error) {
	var q url.Values
	if limit > 0 {
		q = url.Values{"limit": {strconv.Itoa(limit)}}
	}
	return doJSON[api.RunContext](ctx, c, "read context of "+id, http.MethodGet, "/v1/runs/"+esc(id)+"/context", q, nil)
}

// SessionCost returns what a session has cost so far: every submission's
// run and sub-agents, the one at work included.
func (c *Client) SessionCost(ctx context.Context, id string) (api.RunningCost, error) {
	return doJSON[api.RunningCost](ctx, c, "read cost of session "+id, http.MethodGet, "/v1/sessions/"+esc(id)+"/cost", nil, nil)
}
