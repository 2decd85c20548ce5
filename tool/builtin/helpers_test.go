package builtin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/sandbox/local"
	"github.com/hitch-dev/hitch/tool"
)

// env is one sandbox on a fresh directory, with its tools.
type env struct {
	t     testing.TB
	dir   string
	sb    *local.Sandbox
	ts    *toolset
	tools map[string]tool.Tool
}

func setup(t testing.TB, cfg ...local.Config) *env {
	t.Helper()
	c := local.Config{Isolation: sandbox.IsolationNone}
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if c.Root == "" {
		c.Root = t.TempDir()
	}
	sb, err := local.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	e := &env{t: t, dir: sb.Root(), sb: sb, ts: &toolset{sb: sb}, tools: map[string]tool.Tool{}}
	for _, n := range Names() {
		if missingCap(sb.Capabilities(), needs[n]) != "" {
			continue
		}
		tl, err := e.ts.build(n)
		if err != nil {
			t.Fatal(err)
		}
		e.tools[n] = tl
	}
	return e
}

// call runs a tool with args marshalled to JSON.
func (e *env) call(name string, args any) (string, error) {
	e.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.tools[name].Call(context.Background(), raw)
}

// mustCall is call that fails the test on error.
func (e *env) mustCall(name string, args any) string {
	e.t.Helper()
	out, err := e.call(name, args)
	if err != nil {
		e.t.Fatalf("%s %v: %v", name, args, err)
	}
	return out
}

func (e *env) write(rel, content string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) readFile(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

type m = map[string]any

func localConfig(dir string) local.Config {
	return local.Config{Root: dir, Isolation: sandbox.IsolationNone}
}
