package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/internal/canary"
	"github.com/hitch-dev/hitch/internal/testproc"
	"github.com/hitch-dev/hitch/secret"
)

// The two canaries: a model key named by api_key_env, and a secret the
// bash tool is handed.
const (
	keyCanary   = "sk-canary-model-key-7Qz9xW42Rt"
	tokenCanary = "ghp_canaryToken0042Rz81"
)

// canaries finds the secrets of the canary tests in every spelling the
// redactor knows, and reversed or cut: the model key, the tool's secret,
// and the server's admin token and approver credential, which are
// variables of hitch serve's environment.
var canaries = func() *canary.Finder {
	f, err := canary.New(map[string]string{"key": keyCanary, "token": tokenCanary, "admin": canaryAdmin, "credential": credentialCanary})
	if err != nil {
		panic(err)
	}
	return f
}()

// leaked reports the first spelling of a canary found in s, or "".
func leaked(s string) string { return canaries.Find([]byte(s)) }

// isolationPaths are the PATHs a canary test runs the binary with, by
// name: one holding the tools the canary script uses and not bwrap, so
// commands run without isolation, and the test's own when it has bwrap.
func isolationPaths(t *testing.T) map[string]string {
	t.Helper()
	paths := map[string]string{"isolation none": pathWithoutBwrap(t)}
	if _, err := exec.LookPath("bwrap"); err == nil {
		paths["bwrap"] = os.Getenv("PATH")
	} else {
		t.Log("bwrap is not installed: only commands without isolation are checked")
	}
	return paths
}

// storeClean fails t when a file of the SQLite store in dir holds a
// canary.
func storeClean(t *testing.T, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "hitch.db*"))
	if len(files) == 0 {
		t.Fatal("no store file")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if l := leaked(string(b)); l != "" {
			t.Errorf("%s holds %q", filepath.Base(f), l)
		}
	}
}

// pathWithoutBwrap is a PATH holding the tools the canary script uses, and
// not bwrap, so commands run without isolation.
func pathWithoutBwrap(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	for _, name := range []string{"bash", "sh", "env", "base64", "tr", "fold", "cat", "grep", "rev"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// canaryDir writes a config whose scripted model repeats its own key and
// whose bash tool prints, echoes, encodes and fails with a secret.
func canaryDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	call := func(cmd string) string {
		args, _ := json.Marshal(map[string]string{"command": cmd})
		return fmt.Sprintf(`{name: bash, args: '%s'}`, strings.ReplaceAll(string(args), "'", "''"))
	}
	files := map[string]string{
		"hitch.yaml": `
secrets:
  gh: {env: HITCH_CANARY_TOKEN}
models:
  m: {provider: scripted, script: script.yaml, api_key_env: HITCH_CANARY_KEY}
agents:
  - name: ops
    model: m
    tools: [bash]
    policy: allow_all
    workspace: .
    env: {TOKEN: gh}
`,
		"script.yaml": `turns:
  - text: "my key is ` + keyCanary + `"
    fail: [{kind: overloaded, message: "invalid key ` + strings.ToUpper(keyCanary) + ` (` + keyCanary[:3] + `...` + keyCanary[len(keyCanary)-4:] + `)"}]
    calls:
      - ` + call("echo $TOKEN") + `
      - ` + call("env") + `
      - ` + call(`printf %s "$TOKEN" | base64`) + `
      - ` + call(`echo "$TOKEN" | tr a-z A-Z`) + `
      - ` + call(`echo "$TOKEN" | fold -w 5`) + `
      - ` + call(`echo "token $TOKEN refused" >&2; exit 3`) + `
      - ` + call(`cat /proc/$PPID/environ | tr '\0' '\n'; cat /proc/1/environ | tr '\0' '\n'`) + `
      - ` + call(`read -r _ _ _ pp _ < /proc/$PPID/stat; echo "hitch is $pp"; tr '\0' '\n' < /proc/$pp/environ | grep HITCH_ | rev`) + `
      - ` + call("echo "+keyCanary) + `
  - text: "done; the key was ` + keyCanary + `"
`,
	}
	writeFilesIn(t, dir, files)
	return dir
}

// runCanary runs the real binary with the canaries in its environment.
func runCanary(t *testing.T, dir string, path string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // bash under bwrap on a loaded machine
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	testproc.DieWithParent(cmd)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + path, "HOME=" + dir, "HITCH_CANARY_KEY=" + keyCanary, "HITCH_CANARY_TOKEN=" + tokenCanary}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// A secret canary: whatever a run's tools and model do with the secrets,
// they appear nowhere: not in the SQLite file read raw, nor the CLI's
// output, with or without bwrap.
func TestSecretCanary(t *testing.T) {
	testproc.Heavy(t, "builds the binary")
	for name, path := range isolationPaths(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := canaryDir(t)
			var all strings.Builder
			out, err := runCanary(t, dir, path, "run", "--id", "canary-1", "check the secrets")
			if err != nil {
				t.Fatalf("run: %v\n%s", err, out)
			}
			all.WriteString(out)
			if name == "isolation none" && !strings.Contains(out, "WARNING: agent ops: commands run without isolation") {
				t.Errorf("the fallback to no isolation was not said at start:\n%s", out)
			}
			for _, want := range []string{"[secret:gh]", "[secret:HITCH_CANARY_KEY]"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %s:\n%s", want, out)
				}
			}
			for _, args := range [][]string{{"runs", "show", "canary-1"}, {"runs", "events", "canary-1", "--json"}, {"run", "--json", "--id", "canary-1", "check the secrets"}} {
				out, err := runCanary(t, dir, path, args...)
				if err != nil && !strings.Contains(err.Error(), "exit status") {
					t.Fatalf("%v: %v", args, err)
				}
				all.WriteString(out)
				if name == "isolation none" && args[1] == "show" && !strings.Contains(out, "WARNING: commands run without isolation") {
					t.Errorf("runs show does not say the commands ran without isolation:\n%s", out)
				}
			}
			if f := leaked(all.String()); f != "" {
				t.Errorf("the CLI printed %q:\n%s", f, all.String())
			}
			storeClean(t, dir)
		})
	}
}

// reverse spells s backwards, a form no redactor knows: a canary found so
// was read where it should not be.
func reverse(s string) string {
	b := []byte(s)
	slices.Reverse(b)
	return string(b)
}

// The terminal redacts a value split across writes and reports every byte
// it was given as written.
func TestTerminalRedactsAcrossWrites(t *testing.T) {
	t.Parallel()
	red, err := secret.New(map[string]string{"gh": tokenCanary})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	term := &terminal{w: &b, red: &redaction{r: red}}
	text := "token: " + tokenCanary + "\n"
	for i := 0; i < len(text); i += 4 {
		piece := []byte(text[i:min(i+4, len(text))])
		if n, err := term.Write(piece); err != nil || n != len(piece) {
			t.Fatalf("Write(%q) = %d, %v", piece, n, err)
		}
	}
	term.flush()
	if b.String() != "token: [secret:gh]\n" {
		t.Fatalf("terminal wrote %q", b.String())
	}
}
