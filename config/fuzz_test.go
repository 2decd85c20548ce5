package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad: any file either loads or is refused with Problems naming the
// file; loading never panics. Sound files that declare MCP servers are
// left out: loading them starts the programs they name.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		"models:\n  m: {provider: scripted, script: s.yaml}\nagents:\n  - {name: a, model: m, policy: allow_all}\n",
		"agents: [\n",
		"agents:\n  - name: a\n    policy: [{tools: ['['], verdict: allow}]\n",
		"agents:\n  - name: a\n    limits: {tool_timeout: 5, model_attempts: -1}\n",
		"models: {m: {provider: openai}}\nagents: [{name: a, model: m, policy: deny_all, sub_agents: [a]}]\n",
		"agents:\n  - name: a\n    policy: [{tools: ['*'], when: 'args.x >', verdict: allow}, {tools: [w], when: 'agent.name', verdict: deny}]\n",
		"\x00", "---\n...\n", "agents: !!binary aGk=\n",
		"agents: 3\n", "agents:\n  - {name: a, version: x, limits: {max_tool_result: 99999999999999999999999}}\n",
		"m: &x {provider: scripted, script: s.yaml}\nmodels: {m: *x}\nagents: [{name: a, model: m, policy: allow_all}]\n",
		"agents: [{name: a, budget: {usd: .nan}}, {<<: {name: b}}]\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte("turns:\n  - text: hi\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "hitch.yaml")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if f, _, err := Parse(path); err == nil && len(f.MCP) > 0 {
			t.Skip("a sound file with MCP servers would start programs it names")
		}
		cfg, err := Load(path, Options{Getenv: func(string) string { return "" }})
		if err != nil {
			if !IsProblem(err) {
				t.Fatalf("%q: error is not a config problem: %v", body, err)
			}
			return
		}
		cfg.Close()
	})
}
