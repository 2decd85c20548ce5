package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// workerSetup builds hitch and writes a config whose one tool call holds
// until a file named "go" appears in the workspace.
func workerSetup(t *testing.T) (bin, dir, cfg string) {
	t.Helper()
	bin, dir = binary(t), t.TempDir()
	files := map[string]string{
		"hitch.yaml": `store: runs.db
models:
  m: {provider: scripted, script: script.yaml}
agents:
  - name: ops
    model: m
    tools: [bash]
    policy: allow_all
    workspace: .
`,
		"script.yaml": `turns:
  - calls: [{name: bash, args: '{"command": "echo begun >> effects.log; while [ ! -e go ]; do sleep 0.02; done; echo done >> effects.log"}'}]
  - text: finished
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg = filepath.Join(dir, "hitch.yaml")
	if code, out, errOut := cli(t, "run", "-c", cfg, "--id", "w1", "--detach", "do the slow thing"); code != exitOK {
		t.Fatalf("run --detach: exit %d\n%s\n%s", code, out, errOut)
	}
	return bin, dir, cfg
}

// startWorker starts hitch worker with a lease far longer than the test,
// and returns once the tool body is running. lines carries its stderr.
func startWorker(t *testing.T, bin, cfg string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(bin, "worker", "-c", cfg, "--lease-ttl", "10m", "--poll", "20ms")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	started := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "t1c1 started") {
				close(started)
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker never started the tool call")
	}
	return cmd, lines
}

func waitLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the worker exited before saying %q", want)
			}
			if strings.Contains(l, want) {
				return
			}
		case <-timeout:
			t.Fatalf("the worker never said %q", want)
		}
	}
}

// TestWorkerDrainsOnSIGTERM: the first SIGTERM lets the running tool body
// finish, journals it and gives the lease back, so recover resumes the run
// at once (its lease would last 10 minutes) with no uncertain call.
func TestWorkerDrainsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and signals a process")
	}
	t.Parallel()
	bin, dir, cfg := workerSetup(t)
	cmd, lines := startWorker(t, bin, cfg)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitLine(t, lines, "worker: draining")
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitLine(t, lines, "worker: drained")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("worker: %v", err)
	}
	code, out, errOut := cli(t, "recover", "-c", cfg, "--lease-ttl", "10m")
	if code != exitOK || !strings.Contains(errOut, "recovered 1 run(s)") {
		t.Fatalf("recover: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = cli(t, "runs", "show", "w1", "-c", cfg)
	if code != exitOK || !strings.Contains(out, "completed") || strings.Contains(out, "uncertain") {
		t.Fatalf("show: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "effects.log")); !bytes.Equal(b, []byte("begun\ndone\n")) {
		t.Errorf("effects %q, want the body run once, to its end", b)
	}
}

// TestWorkerAbortsOnASecondSignal: a second signal cuts the drain short;
// the worker says what it abandoned and exits with an error.
func TestWorkerAbortsOnASecondSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and signals a process")
	}
	t.Parallel()
	bin, _, cfg := workerSetup(t)
	cmd, lines := startWorker(t, bin, cfg)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitLine(t, lines, "worker: draining")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitLine(t, lines, "1 run(s) abandoned")
	if err := cmd.Wait(); err == nil {
		t.Fatal("an aborted drain exited 0")
	}
}
