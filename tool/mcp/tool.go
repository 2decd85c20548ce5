package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitch-dev/hitch/tool"
)

// maxNameLen is the longest tool name every provider accepts.
const maxNameLen = 64

// ToolName returns the name a model sees for tool of server: "server__tool",
// with each character outside [A-Za-z0-9_-] replaced by '_', and a name over
// 64 characters cut to 55 and ended with '_' and 8 hex digits of a hash of
// "server.tool". The same inputs always give the same name.
func ToolName(server, tool string) string {
	var b strings.Builder
	for _, r := range server + "__" + tool {
		if r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) <= maxNameLen {
		return name
	}
	sum := sha256.Sum256([]byte(server + "." + tool))
	return name[:maxNameLen-9] + "_" + hex.EncodeToString(sum[:4])
}

// Hints are what a server's annotations say about one of its tools. A server
// states them about itself; a policy may use them, but should not trust a
// server it does not trust.
type Hints struct {
	Server string // the server's name in hitch
	Tool   string // the tool's name on the server
	// ReadOnly: the tool does not change its environment.
	ReadOnly bool
	// Destructive: the tool may destroy or overwrite; true unless the server
	// says otherwise or the tool is read-only, as the protocol specifies.
	Destructive bool
	// Idempotent: calling it again with the same arguments has no further
	// effect.
	Idempotent bool
	// OpenWorld: the tool reaches outside the server (the web, other
	// systems); true unless the server says otherwise.
	OpenWorld bool
}

// HintsOf returns the hints of t when t is a tool of a Client.
func HintsOf(t tool.Tool) (Hints, bool) {
	m, ok := t.(*remoteTool)
	if !ok {
		return Hints{}, false
	}
	return m.hints, true
}

// remoteTool is one tool of a server, seen as a hitch tool.
type remoteTool struct {
	c     *Client
	name  string // on the server
	info  tool.Info
	hints Hints
}

var (
	_ tool.Tool   = (*remoteTool)(nil)
	_ tool.Hinter = (*remoteTool)(nil)
)

func (t *remoteTool) Info() tool.Info { return t.info }

// Hints returns what the server's annotations say, for the policy.
func (t *remoteTool) Hints() tool.Hints {
	h := t.hints
	return tool.Hints{ReadOnly: h.ReadOnly, Destructive: h.Destructive, Idempotent: h.Idempotent, OpenWorld: h.OpenWorld}
}

func (t *remoteTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return t.c.call(ctx, t, args)
}

// same reports whether t and u declare the same tool.
func (t *remoteTool) same(u *remoteTool) bool {
	return t.name == u.name && t.hints == u.hints && t.info.Name == u.info.Name &&
		t.info.Description == u.info.Description && bytes.Equal(t.info.Schema, u.info.Schema) &&
		t.info.Replay == u.info.Replay && t.info.Timeout == u.info.Timeout
}

// newTools maps a server's tool list to hitch tools, refusing names that
// collide once mapped.
func newTools(c *Client, list []*sdk.Tool) ([]tool.Tool, error) {
	s := c.srv
	tools := make([]tool.Tool, 0, len(list))
	seen := make(map[string]string, len(list))
	for _, mt := range list {
		name := ToolName(s.Name, mt.Name)
		if prev, ok := seen[name]; ok {
			return nil, fmt.Errorf("mcp server %q: tools %q and %q both map to the name %q; rename one on the server", s.Name, prev, mt.Name, name)
		}
		seen[name] = mt.Name
		schema, err := objectSchema(mt.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("mcp server %q: tool %q: %w", s.Name, mt.Name, err)
		}
		h := Hints{Server: s.Name, Tool: mt.Name, Destructive: true, OpenWorld: true}
		if a := mt.Annotations; a != nil {
			h.ReadOnly, h.Idempotent = a.ReadOnlyHint, a.IdempotentHint
			if a.DestructiveHint != nil {
				h.Destructive = *a.DestructiveHint
			}
			if a.OpenWorldHint != nil {
				h.OpenWorld = *a.OpenWorldHint
			}
		}
		if h.ReadOnly {
			h.Destructive = false
		}
		info := tool.Info{
			Name:        name,
			Description: mt.Description,
			Schema:      schema,
			Timeout:     s.CallTimeout,
		}
		if info.Description == "" {
			info.Description = mt.Title
		}
		if h.ReadOnly || h.Idempotent {
			info.Replay = DefaultReplay
		}
		if o, ok := s.Tools[mt.Name]; ok {
			if o.Replayable != nil {
				info.Replay = 0
				if *o.Replayable {
					info.Replay = DefaultReplay
				}
			}
			if o.Timeout != 0 {
				info.Timeout = o.Timeout
			}
		}
		tools = append(tools, &remoteTool{c: c, name: mt.Name, info: info, hints: h})
	}
	return tools, nil
}

// objectSchema encodes a tool's input schema with an object at its root, as
// every provider wants.
func objectSchema(in any) (json.RawMessage, error) {
	m := map[string]any{}
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("encode input schema: %w", err)
		}
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			m = map[string]any{}
		}
	}
	m["type"] = "object"
	if _, ok := m["properties"].(map[string]any); !ok {
		m["properties"] = map[string]any{}
	}
	return json.Marshal(m)
}

// resultText renders a call's result as the text a model sees, at most
// maxBytes: text joined by newlines, structured content as JSON, other content
// described in a line.
func resultText(res *sdk.CallToolResult, maxBytes int) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link: %s %s]", c.URI, c.MIMEType))
		case *sdk.EmbeddedResource:
			r := c.Resource
			switch {
			case r == nil:
				parts = append(parts, "[resource]")
			case r.Text != "" || len(r.Blob) == 0:
				parts = append(parts, fmt.Sprintf("[resource: %s]\n%s", r.URI, r.Text))
			default:
				parts = append(parts, fmt.Sprintf("[resource: %s, %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
	}
	if res.StructuredContent != nil {
		if js, err := json.Marshal(res.StructuredContent); err == nil && !hasJSON(parts, js) {
			parts = append(parts, string(js))
		}
	}
	return bound(strings.Join(parts, "\n"), maxBytes)
}

// hasJSON reports whether one of parts is the JSON value js, so structured
// content a server also sent as text is not repeated.
func hasJSON(parts []string, js []byte) bool {
	for _, p := range parts {
		var b bytes.Buffer
		if json.Compact(&b, []byte(p)) == nil && bytes.Equal(b.Bytes(), js) {
			return true
		}
	}
	return false
}

// bound cuts s to at most maxBytes, on a rune boundary, ending with a note
// that says how much was kept.
func bound(s string, maxBytes int) string {
	if len(s) <= maxBytes {
		return s
	}
	const noteFormat = "\n[output cut: %d of %d bytes shown]"
	keep := max(maxBytes-len(fmt.Sprintf(noteFormat, len(s), len(s))), 0)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	out := s[:keep] + fmt.Sprintf(noteFormat, keep, len(s))
	if len(out) > maxBytes {
		return out[:maxBytes] // a bound too small for the note
	}
	return out
}
