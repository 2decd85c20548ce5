package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitch-dev/hitch/tool"
)

// ErrClosed is returned by the calls of a closed Client.
var ErrClosed = errors.New("mcp client is closed")

// Client holds one server's session and exposes its tools as hitch tools.
// It reconnects on the next call after the server drops the session (a
// stdio program that exits is started again), and follows the server's
// tools/list_changed notices. It is safe for concurrent use.
type Client struct {
	srv    Server
	sdk    *sdk.Client
	http   *http.Client    // nil for stdio
	idle   *http.Transport // closed with the client
	ctx    context.Context // ends with Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the client starts
	relist chan struct{}  // asks the lister to fetch the tool list again

	mu         sync.Mutex
	closed     bool
	sess       *session
	connecting chan struct{} // closed when the connect in flight ends
	failures   int           // connects failed in a row
	nextTry    time.Time     // no connect before this after a failure
	lastErr    error
	snap       Snapshot
	listErr    error
}

// session is one connection to the server.
type session struct {
	cs   *sdk.ClientSession
	done chan struct{} // closed once the connection has ended
}

func (s *session) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Snapshot is the server's tool list at one moment.
type Snapshot struct {
	// Version counts the lists the client has seen, from 1; it grows when
	// the tools change.
	Version int64
	Tools   []tool.Tool
	// Changed is closed once a newer snapshot replaces this one.
	Changed <-chan struct{}
	changed chan struct{}
}

// Connect starts (stdio) or reaches (HTTP) the server, completes the
// handshake and lists its tools, all within the server's connect timeout.
// Close the client when done with it.
func Connect(ctx context.Context, s Server) (*Client, error) {
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	c := &Client{srv: s, relist: make(chan struct{}, 1)}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.sdk = sdk.NewClient(&sdk.Implementation{Name: "hitch", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case c.relist <- struct{}{}:
			default: // one is already due
			}
		},
	})
	if s.URL != "" {
		c.idle = http.DefaultTransport.(*http.Transport).Clone()
		c.http = &http.Client{Transport: &headerTransport{base: c.idle, headers: s.Headers}}
	}
	if _, err := c.session(ctx); err != nil {
		c.Close()
		return nil, err
	}
	c.spawn(c.lister)
	return c, nil
}

// Name returns the server's name.
func (c *Client) Name() string { return c.srv.Name }

// Tools returns the server's tools as of the latest list.
func (c *Client) Tools() []tool.Tool { return c.Snapshot().Tools }

// Snapshot returns the latest tool list and its version.
func (c *Client) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snap
}

// Changed returns a channel closed when the tool list changes after this
// call; then Snapshot has the new list.
func (c *Client) Changed() <-chan struct{} { return c.Snapshot().Changed }

// ListErr returns why the latest attempt to fetch the tool list again was
// refused (such as two tools whose names collide), or nil. The previous list
// stays in force until one succeeds.
func (c *Client) ListErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listErr
}

// Close ends the session (a stdio server's input is closed, and it is
// stopped if it does not exit) and waits for the client's goroutines. It is
// idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	s := c.sess
	c.sess = nil
	c.mu.Unlock()
	c.cancel()
	var err error
	if s != nil {
		err = s.cs.Close()
	}
	c.wg.Wait()
	if c.idle != nil {
		c.idle.CloseIdleConnections()
	}
	if err != nil && !errors.Is(err, sdk.ErrConnectionClosed) {
		return fmt.Errorf("close mcp server %q: %w", c.srv.Name, err)
	}
	return nil
}

// session returns the live session, connecting first when there is none.
// One connect runs at a time; after a failed one the next waits out a
// backoff, and calls in between fail at once.
func (c *Client) session(ctx context.Context) (*session, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if s := c.sess; s != nil && !s.ended() {
			c.mu.Unlock()
			return s, nil
		}
		if ch := c.connecting; ch != nil {
			c.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if wait := time.Until(c.nextTry); wait > 0 {
			err := fmt.Errorf("mcp server %q is unavailable, next attempt in %s: %w", c.srv.Name, wait.Round(time.Millisecond), c.lastErr)
			c.mu.Unlock()
			return nil, err
		}
		ch := make(chan struct{})
		c.connecting = ch
		c.mu.Unlock()

		s, tools, err := c.dial(ctx)

		c.mu.Lock()
		c.connecting = nil
		close(ch)
		switch {
		case err == nil && c.closed:
			c.mu.Unlock()
			_ = s.cs.Close()
			return nil, ErrClosed
		case err != nil && ctx.Err() != nil:
			c.mu.Unlock() // the caller gave up: no fault of the server's
			return nil, err
		case err != nil:
			c.failures++
			delay := ReconnectMinDelay << min(c.failures-1, 16)
			c.nextTry = time.Now().Add(min(delay, ReconnectMaxDelay))
			c.lastErr = err
			c.mu.Unlock()
			return nil, err
		}
		c.failures, c.lastErr = 0, nil
		c.sess = s
		c.publish(tools)
		c.mu.Unlock()
		return s, nil
	}
}

// dial opens a new session and lists its tools.
func (c *Client) dial(ctx context.Context) (*session, []tool.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.srv.ConnectTimeout)
	defer cancel()
	var t sdk.Transport
	if c.srv.URL != "" {
		t = &sdk.StreamableClientTransport{Endpoint: c.srv.URL, HTTPClient: c.http}
	} else {
		cmd := exec.Command(c.srv.Command, c.srv.Args...)
		cmd.Env = []string{} // never hitch's own environment
		for _, k := range slices.Sorted(maps.Keys(c.srv.Env)) {
			cmd.Env = append(cmd.Env, k+"="+c.srv.Env[k])
		}
		cmd.Dir = c.srv.Dir
		cmd.Stderr = c.srv.Stderr
		t = &stdioTransport{cmd: cmd}
	}
	cs, err := c.sdk.Connect(ctx, t, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to mcp server %q: %w", c.srv.Name, err)
	}
	s := &session{cs: cs, done: make(chan struct{})}
	watching := c.spawn(func() {
		_ = cs.Wait()
		_ = cs.Close()
		close(s.done)
	})
	if !watching {
		_ = cs.Close()
		return nil, nil, ErrClosed
	}
	tools, err := c.list(ctx, s)
	if err != nil {
		_ = cs.Close()
		return nil, nil, err
	}
	return s, tools, nil
}

// list fetches the session's tools, every page, at most MaxTools.
func (c *Client) list(ctx context.Context, s *session) ([]tool.Tool, error) {
	var all []*sdk.Tool
	for t, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools of mcp server %q: %w", c.srv.Name, err)
		}
		if len(all) == MaxTools {
			return nil, fmt.Errorf("list tools of mcp server %q: more than %d tools", c.srv.Name, MaxTools)
		}
		all = append(all, t)
	}
	return newTools(c, all)
}

// publish makes tools the current list when they differ from it. c.mu is
// held.
func (c *Client) publish(tools []tool.Tool) {
	c.listErr = nil
	if c.snap.changed != nil && sameTools(c.snap.Tools, tools) {
		return
	}
	old := c.snap.changed
	ch := make(chan struct{})
	c.snap = Snapshot{Version: c.snap.Version + 1, Tools: tools, Changed: ch, changed: ch}
	if old != nil {
		close(old)
	}
}

func sameTools(a, b []tool.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].(*remoteTool).same(b[i].(*remoteTool)) {
			return false
		}
	}
	return true
}

// lister fetches the tool list again whenever the server says it changed.
func (c *Client) lister() {
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.relist:
		}
		c.mu.Lock()
		s := c.sess
		c.mu.Unlock()
		if s == nil || s.ended() {
			continue // the next connect lists the tools
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.srv.ConnectTimeout)
		tools, err := c.list(ctx, s)
		cancel()
		c.mu.Lock()
		if c.sess == s {
			if err != nil {
				c.listErr = err
			} else {
				c.publish(tools)
			}
		}
		c.mu.Unlock()
	}
}

// drop ends s after a transport failure, so the next call connects anew.
func (c *Client) drop(s *session) {
	c.mu.Lock()
	if c.sess == s {
		c.sess = nil
	}
	c.mu.Unlock()
	if !c.spawn(func() { _ = s.cs.Close() }) {
		_ = s.cs.Close()
	}
}

// spawn runs f in a goroutine that Close waits for, unless the client is
// closed.
func (c *Client) spawn(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

// call runs t on the server. See the package doc for what each failure
// means.
func (c *Client) call(ctx context.Context, t *remoteTool, args json.RawMessage) (string, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return "", &tool.ArgumentError{Tool: t.info.Name, Reason: "arguments must be a JSON object"}
	}
	if d := t.info.Timeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	replayable := t.info.Replay > 0
	for attempt := 1; ; attempt++ {
		s, err := c.session(ctx)
		if err != nil {
			return "", fmt.Errorf("call %s: %w", t.info.Name, err)
		}
		p := &probe{}
		res, err := s.cs.CallTool(withProbe(ctx, p), &sdk.CallToolParams{Name: t.name, Arguments: args})
		if err == nil {
			text := resultText(res, c.srv.MaxResult)
			if res.IsError {
				if text == "" {
					text = "the tool reported an error"
				}
				return "", errors.New(text)
			}
			return text, nil
		}
		acted := p.sent.Load() && !p.rejected.Load() // the server may have run it
		err = fmt.Errorf("call %s on mcp server %q: %w", t.name, c.srv.Name, err)
		if ctx.Err() != nil {
			if acted && !replayable {
				return "", tool.Uncertain(err)
			}
			return "", err
		}
		if rpc := protocolError(err); rpc != nil {
			// The server answered with a protocol error.
			switch {
			case rpc.Code == jsonrpc.CodeInvalidParams:
				return "", &tool.ArgumentError{Tool: t.info.Name, Reason: rpc.Message}
			case rpc.Code == jsonrpc.CodeInternalError && acted && !replayable:
				return "", tool.Uncertain(err)
			}
			return "", err
		}
		// The connection failed: this session is done.
		c.drop(s)
		// Under the runtime, a replayable tool's lost attempt is the
		// runtime's to run again, so the journal shows it; alone, the
		// client tries once more itself.
		call, underRuntime := tool.CallFrom(ctx)
		if attempt == 1 && (!acted || (replayable && !underRuntime)) {
			continue // nothing happened yet, or it is safe to run again
		}
		if acted && (!replayable || (underRuntime && call.Attempt < t.info.Replay)) {
			return "", tool.Uncertain(err)
		}
		return "", err
	}
}

// protocolError returns the JSON-RPC error the server answered with, or nil
// when err is a failure of the connection. The SDK reports those as JSON-RPC
// errors too, with codes of its own.
func protocolError(err error) *jsonrpc.Error {
	var rpc *jsonrpc.Error
	if errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) || !errors.As(err, &rpc) {
		return nil
	}
	switch rpc.Code {
	case codeClientClosing, codeServerClosing, codeRejected:
		return nil
	}
	return rpc
}

// Codes the SDK gives errors of its own making: the connection is closing,
// or the transport refused or lost a message.
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005
)
