package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/internal/testproc"
)

const (
	remoteAdmin  = "remote-admin-token-0123"
	remoteViewer = "remote-viewer-token-0123"
)

// serveFiles starts a real hitch serve on a free loopback port over the
// config files and returns its URL and the config's folder.
func serveFiles(t *testing.T, files map[string]string) (string, string) {
	t.Helper()
	dir := writeFiles(t, files)
	cmd := exec.Command(binary(t), "serve", "-c", filepath.Join(dir, "hitch.yaml"), "--addr", "127.0.0.1:0", "--poll", "50ms")
	cmd.Env = append(os.Environ(), "T_REMOTE_ADMIN="+remoteAdmin, "T_REMOTE_VIEW="+remoteViewer, "HITCH_SERVER=")
	return testproc.Serve(t, cmd).URL, dir
}

// TestRemoteCommands covers what only --server has: the token decides
// the tenant and the role, HITCH_SERVER stands for --server, and a bad
// URL or token is a usage error. TestEveryCommandBothWays runs every
// command both ways.
func TestRemoteCommands(t *testing.T) {
	url, _ := serveFiles(t, backendFiles)
	t.Setenv("HITCH_TOKEN", remoteAdmin)
	t.Setenv("HITCH_SERVER", "")
	// No config and no store here: everything goes through the server.
	t.Chdir(t.TempDir())
	at := func(args ...string) (int, string, string) {
		t.Helper()
		return cli(t, append([]string{"--server", url}, args...)...)
	}
	if code, out, errOut := at("run", "--agent", "quick", "--id", "q1", "hello"); code != 0 || !strings.Contains(out, "answer: quick done") {
		t.Fatalf("run: %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := at("runs", "list", "--tenant", "b"); code != exitUsage || !strings.Contains(errOut, "token") {
		t.Fatalf("runs list --tenant: %d %s", code, errOut)
	}
	if code, _, errOut := at("run", "--agent", "quick", "--tenant", "b", "x"); code != exitUsage || !strings.Contains(errOut, "token") {
		t.Fatalf("run --tenant: %d %s", code, errOut)
	}
	t.Setenv("HITCH_TOKEN", "wrong")
	if code, _, errOut := at("runs", "list"); code != exitUsage || !strings.Contains(errOut, "token") {
		t.Fatalf("a wrong token: %d %s", code, errOut)
	}
	t.Setenv("HITCH_TOKEN", remoteViewer)
	if code, _, errOut := at("run", "--agent", "quick", "x"); code != exitRefused || !strings.Contains(errOut, "viewer") {
		t.Fatalf("a viewer starts a run: %d %s", code, errOut)
	}
	if code, out, _ := at("runs", "show", "q1"); code != 0 || !strings.Contains(out, "q1") {
		t.Fatalf("a viewer reads a run: %d %s", code, out)
	}
	if code, _, errOut := at("doctor"); code != exitRefused || !strings.Contains(errOut, "viewer") {
		t.Fatalf("a viewer asks for the doctor: %d %s", code, errOut)
	}
	t.Setenv("HITCH_TOKEN", remoteAdmin)
	if code, _, errOut := at("run", "--agent", "nobody", "x"); code != exitUsage || !strings.Contains(errOut, "body.agent: is not an agent") {
		t.Fatalf("an unknown agent: %d %s", code, errOut)
	}
	// HITCH_SERVER does what --server does.
	t.Setenv("HITCH_SERVER", url)
	if code, out, _ := cli(t, "runs", "show", "q1"); code != 0 || !strings.Contains(out, "q1") {
		t.Fatalf("HITCH_SERVER: %d %s", code, out)
	}
	if code, _, _ := cli(t, "--server", "localhost:1", "runs", "list"); code != exitUsage {
		t.Fatalf("a server URL without a scheme: %d", code)
	}
}

// TestProblemExitTableIsDocumented keeps the table of docs/cli.md equal to
// api.Problems, the one table the CLI maps problems by.
func TestProblemExitTableIsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, c := range api.Problems {
		name := "`" + strings.TrimPrefix(c.Type, "/v1/problems/") + "`"
		found := false
		for _, line := range strings.Split(doc, "\n") {
			if strings.HasPrefix(line, "| ") && strings.Contains(line, name) && strings.HasSuffix(line, fmt.Sprintf("| %d |", c.Exit)) {
				found = true
			}
		}
		if !found {
			t.Errorf("docs/cli.md has no row giving %s exit code %d", name, c.Exit)
		}
	}
}
