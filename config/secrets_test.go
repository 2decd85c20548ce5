package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSecretsEveryProblemInOnePass(t *testing.T) {
	t.Parallel()
	path := write(t, map[string]string{"script.yaml": script, "short": "abc\n", "hitch.yaml": `
secrets:
  both: {env: A_VAR, file: x}
  none: {}
  inline: {value: "supersecretvalue"}
  unset: {env: HITCH_TEST_UNSET_VAR}
  short: {file: short}
  missing_file: {file: nope}
  "bad name!": {env: X}
models:
  demo: {provider: scripted, script: script.yaml}
agents:
  - name: helper
    model: demo
    tools: [bash]
    policy: allow_all
    env:
      TOKEN: undeclared
      "1BAD": inline
  - name: reader
    model: demo
    tools: [read]
    policy: allow_all
    env: {TOKEN: unset}
`})
	_, err := Load(path, Options{Getenv: func(string) string { return "" }})
	if !IsProblem(err) {
		t.Fatalf("want problems, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"hitch.yaml:3: secrets.both: give exactly one of env",
		"hitch.yaml:4: secrets.none: give exactly one of env",
		"hitch.yaml:5: secrets.inline.value: an inline value is refused",
		"hitch.yaml:6: secrets.unset.env: HITCH_TEST_UNSET_VAR is not set",
		"hitch.yaml:7: secrets.short: the value is 3 bytes",
		"secrets.missing_file.file: open ",
		"secrets.bad name!: the name wants",
		`agents[0].env.TOKEN: "undeclared" is not declared under secrets`,
		`agents[0].env.1BAD: "1BAD" is not an environment variable name`,
		"agents[1].env: no tool of this agent runs commands",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("problems lack %q:\n%s", want, msg)
		}
	}
}

func TestSecretsFromEnvFileDemoAndModelKeys(t *testing.T) {
	t.Parallel()
	path := write(t, map[string]string{"script.yaml": script, "db.secret": "file-secret-0042\n", "hitch.yaml": `
secrets:
  gh: {env: GH_TOKEN}
  db: {file: db.secret}
  demo: {value: "demo-secret-0043", demo: true}
models:
  demo: {provider: scripted, script: script.yaml}
  real: {provider: openai, model: gpt-x, api_key_env: MY_OPENAI_KEY}
agents:
  - name: helper
    model: demo
    tools: [bash]
    policy: allow_all
    env: {GH_TOKEN: gh, DB_PASSWORD: db}
    approvers:
      - {name: ann, secret_env: ANN_SECRET, requirements: ["*"]}
server:
  tokens:
    - {name: adm, role: admin, env: HITCH_TOKEN_ADM}
`})
	env := map[string]string{"GH_TOKEN": "env-secret-0041", "MY_OPENAI_KEY": "sk-model-key-0044", "ANN_SECRET": "approver-secret-0045",
		"HITCH_TOKEN_ADM": "server-token-0046"}
	cfg, err := Load(path, Options{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	in := "env-secret-0041 file-secret-0042 demo-secret-0043 sk-model-key-0044 approver-secret-0045 server-token-0046"
	want := "[secret:gh] [secret:db] [secret:demo] [secret:MY_OPENAI_KEY] [secret:ANN_SECRET] [secret:HITCH_TOKEN_ADM]"
	if got := cfg.Secrets.String(in); got != want {
		t.Fatalf("redacted %q, want %q", got, want)
	}
	for _, v := range []string{"GH_TOKEN", "MY_OPENAI_KEY", "ANN_SECRET", "HITCH_TOKEN_ADM"} {
		if !slices.Contains(cfg.SecretVars, v) {
			t.Errorf("SecretVars %v lacks %s", cfg.SecretVars, v)
		}
	}
}

// Without a usable bwrap, require_isolation refuses an agent with the bash
// tool; without it, the fallback is reported in Warnings.
func TestRequireIsolationWithoutBwrap(t *testing.T) {
	// PATH without bwrap: not parallel.
	bin := t.TempDir()
	for _, p := range []string{"/bin/sh", "/usr/bin/env"} {
		if err := os.Symlink(p, filepath.Join(bin, filepath.Base(p))); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	body := `
models:
  demo: {provider: scripted, script: script.yaml}
sandbox:
  require_isolation: %s
agents:
  - name: helper
    model: demo
    tools: [read, bash]
    policy: allow_all
`
	path := write(t, map[string]string{"script.yaml": script, "hitch.yaml": strings.Replace(body, "%s", "true", 1)})
	_, err := Load(path, Options{})
	if !IsProblem(err) || !strings.Contains(err.Error(), "agents[0].tools") || !strings.Contains(err.Error(), "isolation is required") {
		t.Fatalf("want bash refused, got %v", err)
	}
	path = write(t, map[string]string{"script.yaml": script, "hitch.yaml": strings.Replace(body, "%s", "false", 1)})
	cfg, err := Load(path, Options{RequireIsolation: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "agent helper: commands run without isolation") {
		t.Fatalf("warnings %q", cfg.Warnings)
	}
	// The file is silent: the caller's default applies.
	path = write(t, map[string]string{"script.yaml": script, "hitch.yaml": strings.Replace(body, "  require_isolation: %s\n", "  read: [/etc]\n", 1)})
	if _, err := Load(path, Options{RequireIsolation: true}); !IsProblem(err) {
		t.Fatalf("Options.RequireIsolation ignored: %v", err)
	}
}

// fakeBwrap puts a bwrap of the test's own first on PATH, which logs each
// start to the file it returns and then runs then (shell lines). A test
// that calls it sets PATH, so it cannot be parallel.
func fakeBwrap(t *testing.T, then string) (calls string) {
	t.Helper()
	bin := t.TempDir()
	calls = filepath.Join(bin, "calls")
	if err := os.WriteFile(filepath.Join(bin, "bwrap"), []byte("#!/bin/sh\necho started >> "+calls+"\n"+then), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return calls
}

// Sandboxes are set up only where commands run, and bwrap is probed once
// per process: an agent whose tools run no command never looks for bwrap,
// and agents that do share one probe, however often the file is loaded.
func TestBwrapProbedOnlyForCommands(t *testing.T) {
	calls := fakeBwrap(t, "") // not parallel
	path := write(t, onDemo(`agents:
  - name: reader
    model: demo
    tools: [read, write, edit, glob]
    policy: allow_all
  - name: shell
    model: demo
    tools: [read, bash]
    policy: allow_all
  - name: shell2
    model: demo
    tools: [bash, grep]
    policy: allow_all
`))
	for range 3 {
		cfg, err := Load(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Close()
	}
	b, _ := os.ReadFile(calls)
	if n := strings.Count(string(b), "started"); n != 1 {
		t.Fatalf("bwrap started %d times for three loads of two agents with commands, want 1", n)
	}
}

// A load that defers isolation starts no bwrap and refuses nothing for it:
// the process only queues runs, and a run's own sandbox decides when it
// starts. The same file without the option is refused on a host whose bwrap
// does not work.
func TestDeferIsolation(t *testing.T) {
	calls := fakeBwrap(t, "exit 1\n") // fails; not parallel
	var body strings.Builder
	body.WriteString("models:\n  demo: {provider: scripted, script: script.yaml}\nsandbox:\n  require_isolation: true\nagents:\n")
	for i := range 50 {
		fmt.Fprintf(&body, "  - {name: agent%d, model: demo, tools: [read, write, edit, glob, bash], policy: allow_all}\n", i)
	}
	path := write(t, map[string]string{"script.yaml": script, "hitch.yaml": body.String()})
	cfg, err := Load(path, Options{DeferIsolation: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Close()
	if len(cfg.Warnings) != 0 || len(cfg.Agents) != 50 {
		t.Fatalf("warnings %q, %d agents", cfg.Warnings, len(cfg.Agents))
	}
	if b, _ := os.ReadFile(calls); len(b) != 0 {
		t.Fatalf("a load deferring isolation started bwrap: %q", b)
	}
	if _, err := Load(path, Options{}); !IsProblem(err) || !strings.Contains(err.Error(), "isolation is required") {
		t.Fatalf("without DeferIsolation: %v", err)
	}
}
