// Package client is a Go client of hitch's HTTP API (/v1, docs/api.md).
// It speaks the wire types of package api and nothing else of hitch: a
// program that uses it does not link the runtime.
//
// Errors the server answers with are *Error values carrying the problem
// (RFC 9457): branch on Type, or on Exit for the hitch command's exit code
// of the same class. Follow and FollowSession read event streams and
// resume after a dropped connection by themselves, from the last event
// id, with a bounded backoff.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hitch-dev/hitch/api"
)

// Defaults of a Client; docs/defaults.md lists them.
const (
	// DefaultRetryMin is the first wait before a stream reconnects; it
	// doubles per failed attempt, up to DefaultRetryMax.
	DefaultRetryMin = 100 * time.Millisecond
	// DefaultRetryMax bounds the wait between reconnects.
	DefaultRetryMax = 5 * time.Second
	// DefaultRetries is how many reconnects in a row may fail (no event
	// received between them) before a stream gives up.
	DefaultRetries = 10
	// DefaultTimeout bounds one request that is not an event stream.
	DefaultTimeout = 2 * time.Minute
	// MaxResponseBytes bounds a JSON answer read into memory.
	MaxResponseBytes = 64 << 20
	// MaxEventBytes bounds one server-sent event.
	MaxEventBytes = 16 << 20
)

// Client talks to one hitch server. It is safe for concurrent use.
type Client struct {
	base    *url.URL
	token   string
	hc      *http.Client
	timeout time.Duration
	retry   retry
}

type retry struct {
	min, max time.Duration
	tries    int
}

// Option configures a Client.
type Option func(*Client)

// WithToken sends a bearer token with every request.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient uses hc instead of a client of its own.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithTimeout bounds each request that is not an event stream (default
// DefaultTimeout; a wait's long poll gets its own timeout added).
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithRetry sets the reconnect backoff of event streams: the first wait,
// the longest, and how many failed reconnects in a row end the stream.
func WithRetry(min, max time.Duration, tries int) Option {
	return func(c *Client) { c.retry = retry{min: min, max: max, tries: tries} }
}

// New returns a client of the server at baseURL (http://127.0.0.1:7077).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("new client: server URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("new client: server URL %q: want http://HOST:PORT or https://HOST:PORT", baseURL)
	}
	c := &Client{base: u, hc: http.DefaultClient, timeout: DefaultTimeout,
		retry: retry{min: DefaultRetryMin, max: DefaultRetryMax, tries: DefaultRetries}}
	for _, o := range opts {
		o(c)
	}
	switch {
	case c.timeout <= 0:
		return nil, fmt.Errorf("new client: timeout %s: want more than 0", c.timeout)
	case c.retry.min <= 0 || c.retry.max < c.retry.min:
		return nil, fmt.Errorf("new client: retry waits %s to %s: want 0 < min <= max", c.retry.min, c.retry.max)
	case c.retry.tries < 1:
		return nil, fmt.Errorf("new client: retries %d: want 1 or more", c.retry.tries)
	}
	return c, nil
}

// Error is a problem the server answered with, or a failure to talk to it.
type Error struct {
	// Problem is the server's answer. For an answer that was not a
	// problem document (a proxy's error page), its Type is the class of
	// the HTTP status.
	Problem api.Problem
	// Op names the request: "start run", "get run r1", ...
	Op string
}

func (e *Error) Error() string {
	msg := e.Problem.Detail
	if msg == "" {
		msg = e.Problem.Title
	}
	return fmt.Sprintf("%s: %s", e.Op, msg)
}

// Type is the problem's type URI (api.TypeNotFound, ...).
func (e *Error) Type() string { return e.Problem.Type }

// Status is the HTTP status.
func (e *Error) Status() int { return e.Problem.Status }

// Exit is the hitch command's exit code for the problem's class (the one
// table, api.Problems); 1 for a type it does not know.
func (e *Error) Exit() int {
	if c, ok := api.ClassOf(e.Problem.Type); ok {
		return c.Exit
	}
	return 1
}

// Is matches another *Error of the same type, so
// errors.Is(err, client.ErrNotFound) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Op == "" && t.Problem.Type == e.Problem.Type
}

// Sentinels for errors.Is, one per common class.
var (
	ErrNotFound     = &Error{Problem: api.Problem{Type: api.TypeNotFound}}
	ErrConflict     = &Error{Problem: api.Problem{Type: api.TypeConflict}}
	ErrForbidden    = &Error{Problem: api.Problem{Type: api.TypeForbidden}}
	ErrUnauthorized = &Error{Problem: api.Problem{Type: api.TypeUnauthorized}}
	ErrInvalid      = &Error{Problem: api.Problem{Type: api.TypeInvalid}}
	ErrUnavailable  = &Error{Problem: api.Problem{Type: api.TypeUnavailable}}
)

// IsTransient reports whether a request may succeed if tried again: the
// server was unreachable, stopping, busy or out of time.
func IsTransient(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	switch e.Problem.Type {
	case api.TypeUnavailable, api.TypeTimeout, api.TypeBusy, api.TypeTooManyStreams, api.TypeBehind:
		return true
	}
	return false
}

// doJSON sends one request and decodes its JSON answer into a T.
func doJSON[T any](ctx context.Context, c *Client, op, method, path string, q url.Values, body any, hdr ...string) (T, error) {
	var out T
	_, err := c.do(ctx, op, method, path, q, body, &out, hdr...)
	return out, err
}

// do sends one request and decodes a JSON answer into out (nil: none).
// The status of a success is returned.
func (c *Client) do(ctx context.Context, op, method, path string, q url.Values, body, out any, hdr ...string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := c.request(ctx, method, path, q, body)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] != "" {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return 0, problemOf(op, resp)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes))
		return resp.StatusCode, nil
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return 0, fmt.Errorf("%s: read the answer: %w", op, err)
	}
	if len(raw) > MaxResponseBytes {
		return 0, fmt.Errorf("%s: the answer is over %d bytes", op, MaxResponseBytes)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return 0, fmt.Errorf("%s: decode the answer: %w", op, err)
	}
	return resp.StatusCode, nil
}

func (c *Client) request(ctx context.Context, method, path string, q url.Values, body any) (*http.Request, error) {
	u := strings.TrimRight(c.base.String(), "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode the request: %w", err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// problemOf decodes an error answer. An answer that is not a problem
// document gets the class of its status.
func problemOf(op string, resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var p api.Problem
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == api.ProblemContentType || mt == "application/json" {
		_ = json.Unmarshal(raw, &p)
	}
	if p.Type == "" {
		cl := api.ClassForStatus(resp.StatusCode)
		p = api.Problem{Type: cl.Type, Title: cl.Title, Status: resp.StatusCode,
			Detail: fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(raw[:min(len(raw), 200)])))}
	}
	if p.Status == 0 {
		p.Status = resp.StatusCode
	}
	return &Error{Problem: p, Op: op}
}

func esc(s string) string { return url.PathEscape(s) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
