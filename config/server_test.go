package config

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServerTokenProblems(t *testing.T) {
	t.Parallel()
	_, err := refused(t, onDemo(`agents:
  - {name: helper, model: demo, policy: allow_all}
server:
  tokens:
    - {name: web, role: admin}
    - {name: web, role: root, env: A, file: b}
    - {name: "a b", tenant: "x/y", role: viewer, sha256: nothex}
`),
		`:8: server.tokens[0]: give exactly one of env, file and sha256`,
		`:9: server.tokens[1].name: "web" is already the name of server.tokens[0]`,
		`:9: server.tokens[1].role: "root": want admin, operator or viewer`,
		`:9: server.tokens[1]: give exactly one of env, file and sha256`,
		`:10: server.tokens[2].name: "a b": want`,
		`:10: server.tokens[2].tenant: "x/y": want`,
		`:10: server.tokens[2].sha256: want 64 hex digits`,
	)
	if !IsProblem(err) {
		t.Fatalf("err = %v, want problems", err)
	}
}

func TestServerTokensAreHashed(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("third"))
	path := write(t, map[string]string{"script.yaml": script, "hitch.yaml": `
models:
  demo: {provider: scripted, script: script.yaml}
agents:
  - {name: helper, model: demo, policy: allow_all}
server:
  tokens:
    - {name: a, role: admin, env: TOK_A}
    - {name: b, tenant: acme, role: viewer, file: b.token}
    - {name: c, role: operator, sha256: ` + hexOf(sum[:]) + `}
`, "b.token": "second\n"})
	cfg, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	env := func(k string) string {
		if k == "TOK_A" {
			return "first"
		}
		return ""
	}
	ts, err := cfg.ServerTokens(env)
	if err != nil {
		t.Fatal(err)
	}
	want := []ResolvedToken{
		{Name: "a", Tenant: "default", Role: "admin", Hash: sha256.Sum256([]byte("first"))},
		{Name: "b", Tenant: "acme", Role: "viewer", Hash: sha256.Sum256([]byte("second"))},
		{Name: "c", Tenant: "default", Role: "operator", Hash: sum},
	}
	for i := range want {
		if ts[i] != want[i] {
			t.Errorf("token %d: %+v, want %+v", i, ts[i], want[i])
		}
	}
	if _, err := cfg.ServerTokens(func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "server.tokens[0].env: TOK_A (token a): the variable is not set") {
		t.Errorf("unset variable: %v", err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "b.token"), []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.ServerTokens(env); err == nil || !strings.Contains(err.Error(), "b.token is empty") {
		t.Errorf("empty token file: %v", err)
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
