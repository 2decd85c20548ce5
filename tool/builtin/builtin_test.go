package builtin

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/sandbox/local"
	"github.com/hitch-dev/hitch/tool"
)

func toolNames(ts []tool.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Info().Name)
	}
	return out
}

func TestNew(t *testing.T) {
	t.Parallel()
	open := func(cfg local.Config) sandbox.Sandbox {
		cfg.Root = t.TempDir()
		sb, err := local.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Close() })
		return sb
	}
	full := open(local.Config{Isolation: sandbox.IsolationNone})
	noExec := open(local.Config{DisableExec: true})
	readOnly := open(local.Config{ReadOnly: true, Isolation: sandbox.IsolationNone})
	tests := []struct {
		name    string
		sb      sandbox.Sandbox
		ask     []string
		want    []string
		wantErr string
	}{
		{name: "all", sb: full, want: Names()},
		{name: "some", sb: full, ask: []string{"glob", "read"}, want: []string{"glob", "read"}},
		{name: "all without exec", sb: noExec, want: []string{"read", "write", "edit", "glob"}},
		{name: "all read-only", sb: readOnly, want: []string{"read", "bash", "grep", "glob"}},
		{name: "bash without exec", sb: noExec, ask: []string{"read", "bash"}, wantErr: `bash needs capability "exec"`},
		{name: "grep without exec", sb: noExec, ask: []string{"grep"}, wantErr: `"exec"`},
		{name: "edit read-only", sb: readOnly, ask: []string{"edit"}, wantErr: `edit needs capability "write"`},
		{name: "unknown", sb: full, ask: []string{"cat"}, wantErr: `unknown tool "cat"`},
		{name: "twice", sb: full, ask: []string{"read", "read"}, wantErr: "named twice"},
		{name: "nil sandbox", wantErr: "sandbox is nil"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := New(tc.sb, tc.ask...)
			if erred(t, err, tc.wantErr) {
				return
			}
			if !slices.Equal(toolNames(got), tc.want) {
				t.Fatalf("tools = %v, want %v", toolNames(got), tc.want)
			}
		})
	}
}

func TestInfo(t *testing.T) {
	t.Parallel()
	e := setup(t)
	replay := map[string]int{"read": 3, "grep": 3, "glob": 3}
	for _, n := range Names() {
		info := e.tools[n].Info()
		if info.Name != n || len(info.Description) < 80 {
			t.Errorf("%s: name %q, description %q", n, info.Name, info.Description)
		}
		if info.Replay != replay[n] {
			t.Errorf("%s: replay %d, want %d", n, info.Replay, replay[n])
		}
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(info.Schema, &schema); err != nil || schema.Type != "object" || len(schema.Properties) == 0 {
			t.Errorf("%s: schema %s (%v)", n, info.Schema, err)
		}
		for p, raw := range schema.Properties {
			if !strings.Contains(string(raw), `"description"`) {
				t.Errorf("%s: property %s has no description", n, p)
			}
		}
	}
	if got := e.tools["bash"].Info().Timeout; got <= BashMaxTimeout {
		t.Errorf("bash timeout %v leaves no room for its own %v cap", got, BashMaxTimeout)
	}
}

// A sandbox that requires isolation it cannot have refuses bash, and the
// error says why.
func TestNewRequireIsolationWithoutBwrap(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	sb, err := local.New(local.Config{Root: t.TempDir(), RequireIsolation: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	_, err = New(sb, "read", "bash")
	if err == nil || !strings.Contains(err.Error(), "isolation is required but bwrap is not usable") {
		t.Fatalf("error = %v", err)
	}
	all, err := New(sb)
	if err != nil || slices.Contains(toolNames(all), "bash") {
		t.Fatalf("all tools: %v, %v", toolNames(all), err)
	}
}
