package config

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/hitch-dev/hitch/tool"
	"github.com/hitch-dev/hitch/tool/mcp"
)

// MCPServer declares a Model Context Protocol server whose tools agents may
// name: a program started and spoken to over stdio (command), or a
// streamable-HTTP endpoint (url). See docs/mcp.md.
type MCPServer struct {
	// Name prefixes its tools' names: tool t of server s is "s__t".
	Name string `yaml:"name"`
	// Command is the program to start, looked up in hitch's PATH; one with
	// a slash is relative to this file.
	Command string   `yaml:"command,omitempty"`
	Args    []string `yaml:"args,omitempty"`
	// Env is the program's whole environment: nothing is inherited. A
	// value may refer to hitch's variables as ${NAME}.
	Env map[string]string `yaml:"env,omitempty"`
	// Dir is the program's working directory, relative to this file.
	Dir string `yaml:"dir,omitempty"`
	// URL is a streamable-HTTP endpoint; Headers go with every request,
	// and may refer to variables as ${NAME}.
	URL     string            `yaml:"url,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty"`
	// ConnectTimeout bounds the start, the handshake and the first tool
	// list (default 30s); CallTimeout one call (default 60s, or infinite).
	ConnectTimeout string `yaml:"connect_timeout,omitempty"`
	CallTimeout    string `yaml:"call_timeout,omitempty"`
	// MaxResult bounds the bytes of text one call returns (default 1 MiB).
	MaxResult int `yaml:"max_result,omitempty"`
	// Tools override, by the tool's name on the server, what its
	// annotations imply.
	Tools map[string]MCPTool `yaml:"tools,omitempty"`
}

// MCPTool overrides one tool of an MCP server.
type MCPTool struct {
	// Replayable: true lets the tool run again after a crash or a lost
	// connection; false makes it at most once.
	Replayable *bool `yaml:"replayable,omitempty"`
	// Timeout replaces the server's call_timeout for this tool.
	Timeout string `yaml:"timeout,omitempty"`
}

// MCP returns the client of the MCP server named name, or nil.
func (c *Config) MCP(name string) *mcp.Client {
	return c.clients[name]
}

// MCPServers returns the file's MCP servers as the client connects to
// them, variables expanded, in the file's order.
func (c *Config) MCPServers() []mcp.Server {
	return slices.Clone(c.servers)
}

// mcpServers checks the file's MCP servers and turns them into the
// client's settings, with variables expanded.
func mcpServers(l locator, configPath string, list []MCPServer, getenv func(string) string) ([]mcp.Server, []Problem) {
	var probs []Problem
	out := make([]mcp.Server, 0, len(list))
	seen := map[string]int{}
	for i, y := range list {
		field := fmt.Sprintf("mcp[%d]", i)
		if j, dup := seen[y.Name]; dup && y.Name != "" {
			probs = append(probs, l.problem(field+".name", "%q is already the name of mcp[%d]", y.Name, j))
		}
		seen[y.Name] = i
		s := mcp.Server{Name: y.Name, Command: y.Command, Args: y.Args, URL: y.URL, MaxResult: y.MaxResult,
			Dir: relTo(configPath, y.Dir)}
		if strings.ContainsRune(y.Command, '/') {
			s.Command = relTo(configPath, y.Command)
		}
		expandAll := func(key string, m map[string]string) map[string]string {
			if m == nil {
				return nil
			}
			got := make(map[string]string, len(m))
			for _, k := range slices.Sorted(maps.Keys(m)) {
				v, missing := expand(m[k], getenv)
				for _, name := range missing {
					probs = append(probs, l.problem(fmt.Sprintf("%s.%s.%s", field, key, k), "refers to ${%s}, which is not set", name))
				}
				got[k] = v
			}
			return got
		}
		s.Env = expandAll("env", y.Env)
		s.Headers = expandAll("headers", y.Headers)
		dur := func(key, v string, infinite bool) {
			d, err := duration(v, infinite)
			if err != nil {
				probs = append(probs, l.problem(field+"."+key, "%v", err))
				return
			}
			switch key {
			case "connect_timeout":
				s.ConnectTimeout = d
			case "call_timeout":
				s.CallTimeout = d
			}
		}
		dur("connect_timeout", y.ConnectTimeout, false)
		dur("call_timeout", y.CallTimeout, true)
		if len(y.Tools) > 0 {
			s.Tools = make(map[string]mcp.ToolOverride, len(y.Tools))
			for _, name := range slices.Sorted(maps.Keys(y.Tools)) {
				o := mcp.ToolOverride{Replayable: y.Tools[name].Replayable}
				d, err := duration(y.Tools[name].Timeout, true)
				if err != nil {
					probs = append(probs, l.problem(fmt.Sprintf("%s.tools.%s.timeout", field, name), "%v", err))
				}
				o.Timeout = d
				s.Tools[name] = o
			}
		}
		s = s.WithDefaults()
		var fe *mcp.FieldError
		for _, err := range unjoin(s.Validate()) {
			if errors.As(err, &fe) {
				probs = append(probs, l.problem(field+"."+fe.Field, "%s", fe.Problem))
			} else {
				probs = append(probs, l.problem(field, "%v", err))
			}
		}
		out = append(out, s)
	}
	return out, probs
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// expand replaces each ${NAME} in s by the variable's value; $$ is a
// single $. It returns the names of the variables that are not set (or
// empty): a value is never guessed.
func expand(s string, getenv func(string) string) (string, []string) {
	var b strings.Builder
	var missing []string
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] != '$' || i+1 == len(s):
			b.WriteByte(s[i])
		case s[i+1] == '$':
			b.WriteByte('$')
			i++
		case s[i+1] == '{':
			end := strings.IndexByte(s[i:], '}')
			name := ""
			if end > 0 {
				name = s[i+2 : i+end]
			}
			if !validVar(name) {
				b.WriteByte(s[i])
				continue
			}
			v := getenv(name)
			if v == "" {
				missing = append(missing, name)
			}
			b.WriteString(v)
			i += end
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), missing
}

func validVar(name string) bool {
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		return false
	}
	for _, r := range name {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// selection is the tools of one MCP server that an agent names, as a tool
// source: read at each turn, so tools the server adds later and that match
// are offered from the next turn on.
type selection struct {
	server string
	// names are globs over hitch tool names ("fs__read_file", "fs__*"),
	// each with the field that named it.
	names  []string
	fields []string
	client *mcp.Client // set once connected
}

var _ tool.Source = (*selection)(nil)

func (s *selection) Tools() []tool.Tool {
	if s.client == nil {
		return nil
	}
	var out []tool.Tool
	for _, t := range s.client.Tools() {
		name := t.Info().Name
		if slices.ContainsFunc(s.names, func(g string) bool { ok, _ := path.Match(g, name); return ok }) {
			out = append(out, t)
		}
	}
	return out
}

// mcpTool reads an agent's tools entry that names MCP tools: "server__tool",
// or a glob such as "server__*". It adds the entry to the agent's
// selection of that server.
func mcpTool(l locator, field, name string, servers []mcp.Server, sels *[]*selection) []Problem {
	server, _, _ := strings.Cut(name, "__")
	known := slices.ContainsFunc(servers, func(s mcp.Server) bool { return s.Name == server })
	if !known {
		names := make([]string, len(servers))
		for i, s := range servers {
			names[i] = s.Name
		}
		return []Problem{l.problem(field, "%q names mcp server %q, which is not declared under mcp (have %v)", name, server, names)}
	}
	if _, err := path.Match(name, ""); err != nil {
		return []Problem{l.problem(field, "%q is not a valid glob: %v", name, err)}
	}
	i := slices.IndexFunc(*sels, func(s *selection) bool { return s.server == server })
	if i < 0 {
		*sels = append(*sels, &selection{server: server})
		i = len(*sels) - 1
	}
	s := (*sels)[i]
	s.names, s.fields = append(s.names, name), append(s.fields, field)
	return nil
}

// connectMCP connects to every server at once, each within its connect
// timeout, and hands each agent's selections their client. A tool named
// exactly must be one the server lists now.
func (c *Config) connectMCP(l locator, servers []mcp.Server, sels []*selection) ([]Problem, error) {
	c.clients = make(map[string]*mcp.Client, len(servers))
	clients := make([]*mcp.Client, len(servers))
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() { clients[i], errs[i] = mcp.Connect(context.Background(), s) })
	}
	wg.Wait()
	for i, cl := range clients {
		if cl != nil {
			c.clients[servers[i].Name] = cl
			c.closers = append(c.closers, cl.Close)
		}
		if errs[i] != nil {
			field := fmt.Sprintf("mcp[%d]", i)
			errs[i] = fmt.Errorf("%s:%d: %s: %w", l.path, l.line(field), field, errs[i])
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var probs []Problem
	for _, s := range sels {
		s.client = c.clients[s.server]
		var listed []string
		for _, t := range s.client.Tools() {
			listed = append(listed, t.Info().Name)
		}
		for k, name := range s.names {
			if strings.ContainsAny(name, `*?[\`) || slices.Contains(listed, name) {
				continue
			}
			probs = append(probs, l.problem(s.fields[k], "%q is not a tool of mcp server %q; it lists %s", name, s.server, clipList(listed, 20)))
		}
	}
	return probs, nil
}

// clipList spells at most n names, saying how many more there are.
func clipList(names []string, n int) string {
	if len(names) == 0 {
		return "no tools"
	}
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
