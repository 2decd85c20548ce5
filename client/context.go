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
