package builtin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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

// fileArgs writes content to a new file name and returns the arguments
// that name it as "path", with extra laid over them.
func (e *env) fileArgs(name, content string, extra m) m {
	e.t.Helper()
	e.write(name, content)
	args := m{"path": name}
	for k, v := range extra {
		args[k] = v
	}
	return args
}

// erred checks err against want: with want set, err must contain it, and
// erred reports true (the case ends there); with want empty, err must be
// nil.
func erred(t testing.TB, err error, want string) bool {
	t.Helper()
	if want != "" {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error = %v, want one containing %q", err, want)
		}
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}

type m = map[string]any

func localConfig(dir string) local.Config {
	return local.Config{Root: dir, Isolation: sandbox.IsolationNone}
}

// contains reports on t each of want that text lacks and each of not that
// it has; what names the text.
func contains(t *testing.T, what, text string, want, not []string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(text, s) {
			t.Errorf("%s lacks %.80q:\n%.500s", what, s, text)
		}
	}
	for _, s := range not {
		if strings.Contains(text, s) {
			t.Errorf("%s has %q:\n%.500s", what, s, text)
		}
	}
}
