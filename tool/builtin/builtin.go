package builtin

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/tool"
)

// Bounds of the tools' outputs.
const (
	// ReadMaxLines and ReadMaxBytes bound one read.
	ReadMaxLines = 2000
	ReadMaxBytes = 50 * 1024
	// BashMaxLines and BashMaxBytes bound the kept tail of a command's
	// output.
	BashMaxLines = 2000
	BashMaxBytes = 50 * 1024
	// GrepMaxMatches and GrepMaxLineChars bound grep's results.
	GrepMaxMatches   = 100
	GrepMaxLineChars = 500
	// GlobMaxPaths bounds glob's results.
	GlobMaxPaths = 1000
)

// names in the order New returns them.
var names = []string{"read", "write", "edit", "bash", "grep", "glob"}

// needs lists the sandbox capabilities each tool uses.
var needs = map[string][]string{
	"read":  {sandbox.CapRead},
	"write": {sandbox.CapWrite},
	"edit":  {sandbox.CapRead, sandbox.CapWrite},
	"bash":  {sandbox.CapExec},
	"grep":  {sandbox.CapExec, sandbox.CapRead},
	"glob":  {sandbox.CapRead},
}

// Names lists the built-in tools.
func Names() []string { return append([]string(nil), names...) }

// Needs returns the sandbox capabilities the named tool uses (sandbox.CapRead
// and the like), or nil for a name that is not a built-in tool.
func Needs(name string) []string { return append([]string(nil), needs[name]...) }

// toolset is the state the tools of one New call share.
type toolset struct {
	sb    sandbox.Sandbox
	locks pathLocks

	rgOnce sync.Once
	rg     bool
}

// New returns the named tools acting in sb, or all six when none are named.
// When all are asked for, a tool whose capability sb lacks is left out; a
// tool named explicitly that sb cannot support is an error naming the
// missing capability, as is an unknown name.
func New(sb sandbox.Sandbox, names ...string) ([]tool.Tool, error) {
	if sb == nil {
		return nil, fmt.Errorf("builtin tools: sandbox is nil")
	}
	explicit := len(names) > 0
	if !explicit {
		names = Names()
	}
	ts := &toolset{sb: sb}
	caps := sb.Capabilities()
	seen := map[string]bool{}
	var out []tool.Tool
	for _, n := range names {
		req, ok := needs[n]
		if !ok {
			return nil, fmt.Errorf("builtin tools: unknown tool %q (known: %s)", n, strings.Join(Names(), ", "))
		}
		if seen[n] {
			return nil, fmt.Errorf("builtin tools: %q named twice", n)
		}
		seen[n] = true
		if missing := missingCap(caps, req); missing != "" {
			if explicit {
				if caps.Warning != "" {
					return nil, fmt.Errorf("builtin tools: %s needs capability %q, which the sandbox lacks: %s", n, missing, caps.Warning)
				}
				return nil, fmt.Errorf("builtin tools: %s needs capability %q, which the sandbox lacks", n, missing)
			}
			continue
		}
		t, err := ts.build(n)
		if err != nil {
			return nil, fmt.Errorf("builtin tools: %w", err)
		}
		out = append(out, t)
	}
	return out, nil
}

func missingCap(caps sandbox.Capabilities, req []string) string {
	for _, c := range req {
		if !caps.Has(c) {
			return c
		}
	}
	return ""
}

func (ts *toolset) build(name string) (tool.Tool, error) {
	switch name {
	case "read":
		return compiled("read", readDescription, readSchema, ts.read, tool.WithReplay(3))
	case "write":
		return compiled("write", writeDescription, writeSchema, ts.write)
	case "edit":
		return compiled("edit", editDescription, editSchema, ts.edit)
	case "bash":
		return compiled("bash", bashDescription, bashSchema, ts.bash, tool.WithTimeout(BashMaxTimeout+bashGrace))
	case "grep":
		return compiled("grep", grepDescription, grepSchema, ts.grep, tool.WithReplay(3))
	case "glob":
		return compiled("glob", globDescription, globSchema, ts.glob, tool.WithReplay(3))
	}
	return nil, fmt.Errorf("unknown tool %q", name)
}

// compiled builds a tool on its schema, compiled once per process.
func compiled[In any](name, description string, schema func() (*tool.Schema, error), fn tool.Func[In, string], opts ...tool.Option) (tool.Tool, error) {
	s, err := schema()
	if err != nil {
		return nil, err
	}
	return tool.NewWithCompiled(name, description, s, fn, opts...)
}

// schemaFor infers In's schema, lets the caller add what Go types cannot
// say (minimums, enums), and compiles it once per process: every agent's
// toolset shares it.
func schemaFor[In any](adjust func(props map[string]*jsonschema.Schema)) func() (*tool.Schema, error) {
	return sync.OnceValues(func() (*tool.Schema, error) {
		s, err := jsonschema.For[In](nil)
		if err != nil {
			return nil, err
		}
		if adjust != nil {
			adjust(s.Properties)
		}
		return tool.CompileSchema(s)
	})
}

func minimum(v float64) *float64 { return &v }

// display turns an absolute path into the form the model should pass back:
// relative to the default root when inside it, absolute otherwise.
func (ts *toolset) display(abs string) string {
	root := ts.sb.Root()
	if rel, err := filepath.Rel(root, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return filepath.ToSlash(rel)
	}
	return abs
}

// argError reports arguments the schema could not rule out.
func argError(name, format string, args ...any) error {
	return &tool.ArgumentError{Tool: name, Reason: fmt.Sprintf(format, args...)}
}
