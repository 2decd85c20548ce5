package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/internal/testproc"
)

// workerSetup builds hitch and writes a config whose one tool call holds
// until a file named "go" appears in the workspace.
func workerSetup(t *testing.T) (bin, dir, cfg string) {
	t.Helper()
	bin = binary(t)
	dir, cfg = bashConfig(t, "echo begun >> effects.log; while [ ! -e go ]; do sleep 0.02; done; echo done >> effects.log")
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
	testproc.DieWithParent(cmd)
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

// drainingWorker starts a worker on workerSetup's run and sends it a
// SIGTERM once the tool body runs; it returns when the worker says it is
// draining.
func drainingWorker(t *testing.T) (dir, cfg string, cmd *exec.Cmd, lines <-chan string) {
	t.Helper()
	bin, dir, cfg := workerSetup(t)
	cmd, lines = startWorker(t, bin, cfg)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitLine(t, lines, "worker: draining")
	return dir, cfg, cmd, lines
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
	testproc.Heavy(t, "builds and signals a process")
	dir, cfg, cmd, lines := drainingWorker(t)
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
	testproc.Heavy(t, "builds and signals a process")
	_, _, cmd, lines := drainingWorker(t)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitLine(t, lines, "1 run(s) abandoned")
	if err := cmd.Wait(); err == nil {
		t.Fatal("an aborted drain exited 0")
	}
}

// leaderLine is what hitch worker --json says when who leads changes.
type leaderLine struct {
	Node    string `json:"node"`
	Leader  string `json:"leader"`
	Leading bool   `json:"leading"`
}

// startLeaderWorker starts hitch worker --json with a short leadership and
// returns the leader lines it prints.
func startLeaderWorker(t *testing.T, bin, cfg string) (*exec.Cmd, <-chan leaderLine) {
	t.Helper()
	cmd := exec.Command(bin, "worker", "-c", cfg, "--json", "--poll", "50ms", "--leader-ttl", "1500ms")
	testproc.DieWithParent(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan leaderLine, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var l leaderLine
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Node != "" {
				lines <- l
			}
		}
	}()
	return cmd, lines
}

func nextLeader(t *testing.T, lines <-chan leaderLine) leaderLine {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("a worker exited before saying who leads")
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatal("a worker never said who leads")
	}
	return leaderLine{}
}

// TestWorkersElectOneLeader: of two workers on one store exactly one
// leads, and each names the same leader; once the leader is killed with
// SIGKILL (it cannot resign) the other takes over when the leadership runs
// out, within its TTL and a third after the kill.
func TestWorkersElectOneLeader(t *testing.T) {
	testproc.Heavy(t, "builds and signals processes")
	bin, dir := binary(t), t.TempDir()
	cfg := filepath.Join(dir, "hitch.yaml")
	files := map[string]string{
		"hitch.yaml":  scriptedYAML("runs.db", "{name: a, model: m, policy: allow_all}"),
		"script.yaml": "turns:\n  - text: hi\n",
	}
	writeFilesIn(t, dir, files)
	// The first worker creates the store and leads before the second starts.
	a, aLines := startLeaderWorker(t, bin, cfg)
	first := nextLeader(t, aLines)
	if !first.Leading {
		t.Fatalf("the only worker does not lead: %+v", first)
	}
	_, bLines := startLeaderWorker(t, bin, cfg)
	second := nextLeader(t, bLines)
	if second.Leading || second.Leader != first.Node || second.Node == first.Node {
		t.Fatalf("the second worker says %+v while %s leads", second, first.Node)
	}

	if err := a.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for {
		l := nextLeader(t, bLines)
		if l.Leading {
			took := time.Since(killed)
			t.Logf("took over %s after the kill (TTL 1.5s, attempts every 0.5s)", took)
			// The dead leader's last re-election ran out within a TTL, and
			// the follower attempts every third of it; the rest is slack for
			// a loaded machine.
			const ttl = 1500 * time.Millisecond
			if took > ttl+ttl/3+5*time.Second {
				t.Errorf("took over %s after the kill", took)
			}
			break
		}
		if l.Leader != "" && l.Leader != first.Node {
			t.Fatalf("the follower saw a third leader %q", l.Leader)
		}
	}
	// Nothing about the dead node's leadership is left to it: no line of its
	// says it leads after the kill.
	for l := range aLines {
		if l.Leading {
			t.Errorf("the killed worker printed %+v after SIGKILL", l)
		}
	}
}
