package config

import (
	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
	"os"
	"path/filepath"
	"reflect"
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
		demoConfig,
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
		strictAgrees(t, path, []byte(body))
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

// strictAgrees checks that where the field-by-field decoder stands alone (a
// file without aliases, in which it finds no problem) the strict decoder
// reads the same file, neither refusing it nor reading it differently.
func strictAgrees(t *testing.T, path string, body []byte) {
	t.Helper()
	var field File
	var probs Problems
	ok := func() (ok bool) {
		defer func() {
			if recover() != nil {
				ok = false // parse answers a panic as a problem of its own
			}
		}()
		tree, err := parser.ParseBytes(body, 0)
		if err != nil || hasAliases(tree) || len(tree.Docs) == 0 {
			return false
		}
		d := decoder{l: locator{path: path, tree: tree}}
		d.decode(tree.Docs[0], reflect.ValueOf(&field).Elem(), "")
		probs = d.probs
		return true
	}()
	if !ok || len(probs) > 0 {
		return
	}
	var strict File
	if err := yaml.UnmarshalWithOptions(body, &strict, yaml.Strict()); err != nil {
		t.Fatalf("%q: the field-by-field decoder accepts what the strict one refuses: %v", body, err)
	}
	if !reflect.DeepEqual(field, strict) {
		t.Fatalf("%q: the decoders disagree:\nfield by field %+v\nstrict         %+v", body, field, strict)
	}
}

// demoConfig is a file with most kinds of field, as `hitch demo` writes it.
const demoConfig = `# The offline demo: a scripted model edits a file in a scratch workspace.
store: demo.db
models:
  demo:
    provider: scripted
    script: script.yaml
  chat:
    provider: scripted
    script: chat.yaml
agents:
  - name: fixer
    model: demo
    instructions: |
      You tidy up text files in the workspace. Prefer small, exact edits.
    tools: [glob, read, write, edit, bash]
    workspace: workspace
    policy:
      - tools: [write]
        verdict: deny
        reason: whole-file writes are not allowed here; change files with edit
      - tools: [bash]
        verdict: approval
        requirement: shell
        reason: shell commands need a person's go-ahead
      - tools: ["*"]
        verdict: allow
    approvers:
      - name: demo
        secret: demo-secret       # inline for the demo only: use secret_env for real approvers
        requirements: [shell]
    answer:                       # the final answer is typed: JSON matching this schema
      type: object
      properties:
        summary: {type: string}
        files_changed: {type: integer}
      required: [summary, files_changed]
      additionalProperties: false

  # A conversational agent for sessions: hitch chat -c hitch.yaml --agent chat
  - name: chat
    model: chat
    instructions: |
      You talk with the user about the files in the workspace. Keep answers short.
    tools: [glob, read]
    workspace: workspace
    policy:
      - tools: ["*"]
        verdict: allow
`
