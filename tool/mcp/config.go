package mcp

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hitch-dev/hitch/tool"
)

// Defaults of a Server's settings. Each is a row of defaults.Table.
const (
	// DefaultConnectTimeout bounds starting a server and its handshake,
	// including the first tool list.
	DefaultConnectTimeout = 30 * time.Second
	// DefaultCallTimeout bounds one tools/call.
	DefaultCallTimeout = 60 * time.Second
	// DefaultMaxResult bounds the text one call returns; the rest is cut
	// with a note. Like the engine's largest kept tool result.
	DefaultMaxResult = 1 << 20
	// MaxTools bounds the tools one server may list.
	MaxTools = 1000
	// DefaultReplay is the attempts a tool gets when its annotations say it
	// is read-only or idempotent, or an override declares it replayable.
	DefaultReplay = 3
	// ReconnectMinDelay and ReconnectMaxDelay bound the wait between two
	// failed attempts to reconnect; it doubles per failure.
	ReconnectMinDelay = 100 * time.Millisecond
	ReconnectMaxDelay = 30 * time.Second
)

// Bounds of the settings.
const (
	maxConnectTimeout = 10 * time.Minute
	maxCallTimeout    = 24 * time.Hour
	maxMaxResult      = 64 << 20
	maxServerName     = 32
)

// Server declares one MCP server: either a program hitch starts and talks to
// over stdio (Command) or a streamable-HTTP endpoint (URL).
type Server struct {
	// Name identifies the server; its tools are named "Name.tool". Letters,
	// digits, '-' and '_' (never "__"), 1–32 characters. Required.
	Name string

	// Command is the program to start for a stdio server.
	Command string
	// Args are its arguments.
	Args []string
	// Env is the whole environment of the program: nothing is inherited
	// from hitch's own, so list PATH and HOME here if the server needs them.
	Env map[string]string
	// Dir is the program's working directory; empty means hitch's own.
	Dir string
	// Stderr receives the program's standard error; nil discards it.
	Stderr io.Writer

	// URL is the endpoint of a streamable-HTTP server (http or https).
	URL string
	// Headers are sent with every request to URL, such as Authorization.
	// Their values never appear in errors.
	Headers map[string]string

	// ConnectTimeout bounds starting the server, the handshake and the first
	// tool list. Default DefaultConnectTimeout (30s), range 1ms–10m.
	ConnectTimeout time.Duration
	// CallTimeout bounds one call, and is each tool's Info.Timeout unless an
	// override says otherwise. Default DefaultCallTimeout (60s), range
	// 1ms–24h, or tool.Infinite.
	CallTimeout time.Duration
	// MaxResult bounds the bytes of text one call returns. Default
	// DefaultMaxResult (1 MiB), range 1 B–64 MiB. Keep it at most the
	// agent's Limits.MaxToolResult.
	MaxResult int

	// Tools overrides what the server's annotations imply, by the tool's
	// name on the server (not the hitch name).
	Tools map[string]ToolOverride
}

// ToolOverride adjusts one tool of a server. Overrides win over annotations.
type ToolOverride struct {
	// Replayable, when set, says whether the tool is safe to run again after
	// a crash or a lost connection: true gives it DefaultReplay attempts,
	// false makes it at most once.
	Replayable *bool
	// Timeout replaces the server's CallTimeout for this tool; zero keeps it.
	// Range 1ms–24h, or tool.Infinite.
	Timeout time.Duration
}

var serverNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// WithDefaults returns s with zero settings replaced by their defaults.
func (s Server) WithDefaults() Server {
	s.ConnectTimeout = cmp.Or(s.ConnectTimeout, DefaultConnectTimeout)
	s.CallTimeout = cmp.Or(s.CallTimeout, DefaultCallTimeout)
	s.MaxResult = cmp.Or(s.MaxResult, DefaultMaxResult)
	return s
}

// FieldError is one problem with a Server's settings.
type FieldError struct {
	Server string
	// Field is the setting's key in a configuration file, such as
	// "connect_timeout" or "tools.search.timeout".
	Field   string
	Problem string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("mcp server %q: %s: %s", e.Server, e.Field, e.Problem)
}

// Validate reports every problem with s (after WithDefaults), each a
// *FieldError naming its field, joined.
func (s Server) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, &FieldError{Server: s.Name, Field: field, Problem: fmt.Sprintf(format, a...)})
	}
	switch {
	case s.Name == "":
		bad("name", "is empty")
	case len(s.Name) > maxServerName:
		bad("name", "is %d characters, at most %d", len(s.Name), maxServerName)
	case !serverNameRE.MatchString(s.Name):
		bad("name", "may hold only letters, digits, '-' and '_'")
	case strings.Contains(s.Name, "__"):
		bad("name", `may not contain "__" (it separates server and tool in tool names)`)
	}
	switch {
	case s.Command == "" && s.URL == "":
		bad("command", "give either command (stdio) or url (streamable HTTP)")
	case s.Command != "" && s.URL != "":
		bad("url", "give either command or url, not both")
	case s.URL != "":
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("url", "must be an absolute http or https URL")
		}
		if len(s.Args) > 0 || len(s.Env) > 0 || s.Dir != "" {
			bad("args", "args, env and dir apply to a command, not a url")
		}
	default:
		if len(s.Headers) > 0 {
			bad("headers", "apply to a url, not a command")
		}
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				bad("env", "variable name %q is not valid", k)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		if k == "" || strings.ContainsAny(k, " :\r\n") || strings.ContainsAny(s.Headers[k], "\r\n") {
			bad("headers", "header %q is not valid", k)
		}
	}
	if s.ConnectTimeout < time.Millisecond || s.ConnectTimeout > maxConnectTimeout {
		bad("connect_timeout", "is %s, allowed 1ms–10m", s.ConnectTimeout)
	}
	checkTimeout := func(field string, d time.Duration) {
		if d != tool.Infinite && (d < time.Millisecond || d > maxCallTimeout) {
			bad(field, "is %s, allowed 1ms–24h or infinite", d)
		}
	}
	checkTimeout("call_timeout", s.CallTimeout)
	if s.MaxResult < 1 || s.MaxResult > maxMaxResult {
		bad("max_result", "is %d bytes, allowed 1 B–64 MiB", s.MaxResult)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Tools)) {
		if d := s.Tools[name].Timeout; d != 0 {
			checkTimeout("tools."+name+".timeout", d)
		}
	}
	return errors.Join(errs...)
}
