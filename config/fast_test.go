package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fastSeeds are files decodeFast should read itself, and some it should
// leave to the other decoder.
var fastSeeds = []string{
	demoConfig,
	"models:\n  m: {provider: scripted, script: s.yaml}\nagents:\n  - {name: a, model: m, policy: allow_all}\n",
	"---\nagents:\n  - name: a\n    instructions: >\n      one\n      two\n\n      three\n    tools: [glob, 'read', \"write\"]\n",
	"agents:\n  - name: a\n    instructions: |-\n      kept\n        indented\n    limits: {model_attempts: 12, tool_timeout: 5s, max_tokens: -3, final_turn: true}\n",
	"agents:\n  - name: a\n    instructions: |+\n      trailing\n\n",
	"agents:\n  - name: a\n    budget: {usd: 1.5, tokens: 1000}\n    policy: [{tools: ['*'], verdict: allow}]\n",
	"agents:\n  - name: a\n    answer: {type: object, additionalProperties: false, required: [x], properties: {x: {type: integer}}}\n",
	"agents:\n  - name: a\n    limits: {model_attempts: 012}\n", "agents:\n  - name: a\n    limits: {model_attempts: 1_000}\n",
	"agents:\n  - name: yes\n", "agents:\n  - name: on\n", "agents:\n  - name: 0x1F\n", "agents:\n  - name: \"a\\tb\"\n",
	"agents:\n  - name: a\n    name: b\n", "agents:\n  - name: a\n    nope: 1\n", "agents: [{name: a}]\n---\nx: 1\n",
	"m: &x {provider: scripted}\nmodels: {m: *x}\n", "agents: [{<<: {name: b}}]\n", "agents: !!seq []\n",
	"models:\n  m:\n", "agents:\n  - name: a\n    limits: {model_attempts: 99999999999999999999}\n", "agents:\n\t- name: a\n",
	"agents:\n  - name: a # a comment\n    tools:\n    - glob\n    -   read\n", "store: ~\n", "store: null\n", "store: Null\n",
	"", "# only a comment\n", "{}\n", "[]\n", "agents: {}\n", "agents:\n  - name: a\n    policy: {x: 1}\n",
}

// FuzzFastDecode: a file decodeFast reads is one the field-by-field
// decoder reads the same, without a problem.
func FuzzFastDecode(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		fastAgrees(t, []byte(body))
	})
}

func fastAgrees(t *testing.T, body []byte) {
	t.Helper()
	fast, ok := decodeFast(body)
	if !ok {
		return
	}
	slow, _, probs := decodeTree("hitch.yaml", body)
	if len(probs) > 0 {
		t.Fatalf("%q: decodeFast reads what the other decoder refuses: %v", body, probs)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q: the decoders disagree:\nfast %+v\ntree %+v", body, fast, slow)
	}
}

// TestFastDecodeReadsPlainFiles checks that the plain files the fast path
// exists for are read by it, and read as the other decoder reads them.
func TestFastDecodeReadsPlainFiles(t *testing.T) {
	var b strings.Builder
	b.WriteString("models:\n  demo: {provider: scripted, script: script.yaml}\nagents:\n")
	for _, name := range []string{"a0", "a1", "a2"} {
		b.WriteString("  - name: " + name + "\n    model: demo\n    tools: [glob, read, write, edit, bash]\n    policy: allow_all\n")
	}
	for _, body := range []string{b.String(), fastSeeds[1], fastSeeds[5], fastSeeds[6]} {
		if _, ok := decodeFast([]byte(body)); !ok {
			t.Errorf("decodeFast left a plain file to the other decoder:\n%s", body)
		}
		fastAgrees(t, []byte(body))
	}
	for _, s := range fastSeeds {
		fastAgrees(t, []byte(s))
	}
}

// TestFastDecodeLinesOfLaterProblems checks that a file read by the fast
// path still has its later problems (here an unknown model) reported with
// their lines.
func TestFastDecodeLinesOfLaterProblems(t *testing.T) {
	body := "models:\n  demo: {provider: scripted, script: s.yaml}\nagents:\n  - name: a\n    model: nosuch\n    policy: allow_all\n"
	if _, ok := decodeFast([]byte(body)); !ok {
		t.Fatal("decodeFast left the file to the other decoder")
	}
	path := filepath.Join(t.TempDir(), "hitch.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, Options{Getenv: func(string) string { return "" }})
	var ps Problems
	if !asProblems(err, &ps) || len(ps) == 0 {
		t.Fatalf("Load: %v, want problems", err)
	}
	for _, p := range ps {
		if p.Field == "agents[0].model" && p.Line == 5 {
			return
		}
	}
	t.Fatalf("no problem on agents[0].model at line 5: %+v", ps)
}

func asProblems(err error, ps *Problems) bool {
	p, ok := err.(Problems)
	*ps = p
	return ok
}
