package mcp

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A probe watches one call's request on its way out: whether it left hitch
// (so the server may have acted on it), and whether the server turned it
// away before looking at it (an HTTP 4xx answer, such as 404 for a session
// it no longer knows).
type probe struct {
	sent     atomic.Bool
	rejected atomic.Bool
	answered atomic.Bool // the first HTTP response is in
}

type probeKey struct{}

func withProbe(ctx context.Context, p *probe) context.Context {
	return context.WithValue(ctx, probeKey{}, p)
}

func probeFrom(ctx context.Context) *probe {
	p, _ := ctx.Value(probeKey{}).(*probe)
	return p
}

// stdioTransport starts the server's program and marks a call's probe once
// its request has been written to the program's input.
type stdioTransport struct {
	cmd *exec.Cmd
}

// terminateWait is how long closing a stdio server waits for it to exit
// after its input is closed, before it is signalled to stop.
const terminateWait = 2 * time.Second

func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	conn, err := (&sdk.CommandTransport{Command: t.cmd, TerminateDuration: terminateWait}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &probedConn{Connection: conn}, nil
}

type probedConn struct{ sdk.Connection }

func (c *probedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if p := probeFrom(ctx); p != nil && err == nil {
		p.sent.Store(true)
	}
	return err
}

// headerTransport adds the server's headers to every request and marks a
// call's probe: sent once the request is written, rejected when the server
// answers it with a 4xx status.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	p := probeFrom(req.Context())
	if p == nil || req.Method != http.MethodPost || p.answered.Load() {
		return t.base.RoundTrip(req)
	}
	trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			p.sent.Store(true)
		}
	}}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := t.base.RoundTrip(req)
	if resp != nil && p.answered.CompareAndSwap(false, true) && resp.StatusCode >= 400 && resp.StatusCode < 500 {
		p.rejected.Store(true)
	}
	return resp, err
}
