package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/hitch-dev/hitch/api"
)

// Doctor runs the server's checks of its deployment (an admin of tenant
// default only); network also calls each model once.
func (c *Client) Doctor(ctx context.Context, network bool) (api.DoctorReport, error) {
	var q url.Values
	if network {
		q = url.Values{"network": {"true"}}
	}
	return doJSON[api.DoctorReport](ctx, c, "doctor", http.MethodGet, "/v1/doctor", q, nil)
}
