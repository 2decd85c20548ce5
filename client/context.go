package client

import (
	"context"
	"net/http"

	"github.com/hitch-dev/hitch/api"
)

// RunContext returns where a run's model requests put their tokens (the
// latest 100), with the provider's usage, and what the run's family has
// cost so far.
func (c *Client) RunContext(ctx context.Context, id string) (api.RunContext, error) {
	var out api.RunContext
	_, err := c.do(ctx, "read context of "+id, http.MethodGet, "/v1/runs/"+esc(id)+"/context", nil, nil, &out)
	return out, err
}

// SessionCost returns what a session has cost so far: every submission's
// run and sub-agents, the one at work included.
func (c *Client) SessionCost(ctx context.Context, id string) (api.RunningCost, error) {
	var out api.RunningCost
	_, err := c.do(ctx, "read cost of session "+id, http.MethodGet, "/v1/sessions/"+esc(id)+"/cost", nil, nil, &out)
	return out, err
}
