package testproc

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Buffer is a bytes.Buffer that a process's output pump and a test may
// use at once.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Bytes is a copy of what was written so far.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.b.Bytes())
}

// built holds the binaries Build made, by package and flags, and the
// folder they are in.
var built struct {
	mu   sync.Mutex
	dir  string
	err  error
	bins map[string]*binary
}

type binary struct {
	name string
	once sync.Once
	path string
	err  error
}

// Build builds the Go command in the folder pkg, with flags added to go
// build, once per test process, and returns the binary's path. Main
// removes what it built.
func Build(t testing.TB, pkg string, flags ...string) string {
	t.Helper()
	key := strings.Join(append([]string{pkg}, flags...), " ")
	built.mu.Lock()
	if built.bins == nil {
		built.bins = map[string]*binary{}
	}
	b := built.bins[key]
	if b == nil {
		b = &binary{name: fmt.Sprintf("hitch-%d", len(built.bins))}
		built.bins[key] = b
	}
	if built.dir == "" && built.err == nil {
		built.dir, built.err = os.MkdirTemp("", "hitch-bin-")
	}
	dir, err := built.dir, built.err
	built.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	b.once.Do(func() {
		b.path = filepath.Join(dir, b.name)
		args := append(append([]string{"build"}, flags...), "-o", b.path, pkg)
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Main runs the tests and removes the binaries Build made; a TestMain
// that builds commands calls os.Exit(testproc.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	built.mu.Lock()
	defer built.mu.Unlock()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	return code
}

// listening is the line hitch serve logs once it accepts connections.
var listening = regexp.MustCompile(`serve: listening on (http://\S+)`)

// serveWait bounds how long a server may take to listen; a binary built
// with the race detector starts slowly on a busy machine.
const serveWait = 60 * time.Second

// Server is a hitch serve process that Serve started.
type Server struct {
	// URL is the base URL the server listens on.
	URL string

	t    testing.TB
	cmd  *exec.Cmd
	log  *Buffer
	done chan struct{}
	err  error
}

// Serve starts cmd, a hitch serve told to listen on a free loopback port
// (--addr 127.0.0.1:0), and returns once the server says where it
// listens. Its standard error is kept (Log) and shown when the test
// fails; the server is killed when the test ends, if it still runs.
func Serve(t testing.TB, cmd *exec.Cmd) *Server {
	t.Helper()
	DieWithParent(cmd)
	pr, pw := io.Pipe()
	s := &Server{t: t, cmd: cmd, log: &Buffer{}, done: make(chan struct{})}
	cmd.Stderr = io.MultiWriter(s.log, pw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = cmd.Wait()
		_ = pw.Close()
		close(s.done)
	}()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	t.Cleanup(func() {
		s.Kill()
		if t.Failed() {
			t.Logf("hitch serve's log:\n%s", s.log)
		}
	})
	select {
	case s.URL = <-found:
	case <-s.done:
		t.Fatalf("hitch serve exited: %v\n%s", s.err, s.log)
	case <-time.After(serveWait):
		t.Fatalf("hitch serve did not listen:\n%s", s.log)
	}
	return s
}

// Log is what the server wrote to its standard error so far.
func (s *Server) Log() string { return s.log.String() }

// Kill ends the server with SIGKILL (nothing is drained) and waits for
// it to exit.
func (s *Server) Kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// Stop ends the server with SIGTERM and returns its exit code; a server
// that does not exit within a minute fails the test.
func (s *Server) Stop() int {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(serveWait):
		s.Kill()
		s.t.Fatalf("hitch serve did not stop on SIGTERM:\n%s", s.log)
	}
	return s.cmd.ProcessState.ExitCode()
}

// Exited is closed when the server's process has exited.
func (s *Server) Exited() <-chan struct{} { return s.done }

// Err is how the process exited, once Exited is closed.
func (s *Server) Err() error { return s.err }

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// WriteFiles writes each file, by name, into dir, readable by its owner
// only.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// ConfigDir writes files, by name, into a new temporary folder beside an
// empty folder ws for the agents' workspaces, and returns the folder.
func ConfigDir(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	WriteFiles(t, dir, files)
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// BossScript is the script of a model that starts its sub-agent kid twice
// and then answers "boss done".
const BossScript = "turns:\n  - calls: [{name: kid, args: '{\"prompt\": \"look\"}'}, {name: kid, args: '{\"prompt\": \"look again\"}'}]\n  - text: boss done\n"

// GateScript is the script of GateAgent's model: one bash call that echoes
// approved, then the answer "gate done".
const GateScript = "turns:\n  - calls: [{name: bash, args: '{\"command\": \"echo approved\"}'}]\n  - text: gate done\n"

// Glob is a script's call that lists every file of the workspace.
const Glob = `{name: glob, args: '{"pattern": "*"}'}`

// Script is a scripted model's script: n turns, each after delay and
// asking for call (a YAML flow mapping such as Glob), then one that
// answers text.
func Script(n int, delay, call, text string) string {
	var b strings.Builder
	b.WriteString("turns:\n")
	for range n {
		fmt.Fprintf(&b, "  - delay: %s\n    calls: [%s]\n", delay, call)
	}
	fmt.Fprintf(&b, "  - text: %s\n", text)
	return b.String()
}

// GateAgent is an item of a config's agents list: the agent gate, on the
// model gate, runs bash in the folder ws, each call waiting for an
// approval of requirement shell, which alice (secret alice-secret) gives.
const GateAgent = `  - name: gate
    model: gate
    tools: [bash]
    workspace: ws
    policy:
      - {tools: [bash], verdict: approval, requirement: shell}
    approvers:
      - {name: alice, secret: alice-secret, requirements: [shell]}
`
