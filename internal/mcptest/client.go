package mcptest

import (
	"context"
	"net/http"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Connect opens an MCP client session to the /mcp endpoint of the server
// at url, sending token as its bearer on every request; the session is
// closed when t ends.
func Connect(t testing.TB, ctx context.Context, url, token string) *sdk.ClientSession {
	t.Helper()
	tr := &sdk.StreamableClientTransport{Endpoint: url + "/mcp", DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// bearer adds a token to each request it carries.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
