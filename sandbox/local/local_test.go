package local_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/internal/testproc"
	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/sandbox/local"
)

func open(t *testing.T, cfg local.Config) *local.Sandbox {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = t.TempDir()
	}
	if cfg.Isolation == "" {
		cfg.Isolation = sandbox.IsolationNone
	}
	sb, err := local.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

func bwrapUsable(t *testing.T) bool {
	t.Helper()
	sb, err := local.New(local.Config{Root: t.TempDir(), Isolation: sandbox.IsolationBwrap})
	if err != nil {
		return false
	}
	sb.Close()
	return true
}

func TestCapabilities(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     local.Config
		want    sandbox.Capabilities
		wantErr string
	}{
		{name: "none", cfg: local.Config{Isolation: sandbox.IsolationNone},
			want: sandbox.Capabilities{Exec: true, Read: true, Write: true, Network: true, Isolation: sandbox.IsolationNone,
				Warning: "commands run without isolation: they can read and write whatever this user can"}},
		{name: "require isolation but none", cfg: local.Config{Isolation: sandbox.IsolationNone, RequireIsolation: true}, wantErr: "RequireIsolation"},
		{name: "no exec", cfg: local.Config{DisableExec: true}, want: sandbox.Capabilities{Read: true, Write: true}},
		{name: "read-only", cfg: local.Config{ReadOnly: true, DisableExec: true}, want: sandbox.Capabilities{Read: true}},
		{name: "deny network without bwrap", cfg: local.Config{Isolation: sandbox.IsolationNone, DenyNetwork: true}, wantErr: "needs bwrap"},
		{name: "unknown isolation", cfg: local.Config{Isolation: "docker"}, wantErr: `unknown isolation "docker"`},
		{name: "missing root", cfg: local.Config{Root: "/no/such/dir"}, wantErr: "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cfg.Root == "" {
				tc.cfg.Root = t.TempDir()
			}
			sb, err := local.New(tc.cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			if got := sb.Capabilities(); got != tc.want {
				t.Fatalf("capabilities = %+v, want %+v", got, tc.want)
			}
		})
	}
	if _, err := local.New(local.Config{}); err == nil {
		t.Error("empty Root accepted")
	}
}

func TestCapabilitiesBwrap(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if _, err := local.New(local.Config{Root: t.TempDir(), Isolation: sandbox.IsolationBwrap}); err == nil {
			t.Fatal("bwrap isolation granted without bwrap")
		}
		t.Skip("bwrap not installed")
	}
	if !bwrapUsable(t) {
		t.Skip("bwrap installed but not usable here")
	}
	auto := open(t, local.Config{Isolation: ""})
	_ = auto
	sb, err := local.New(local.Config{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if got := sb.Capabilities(); got.Isolation != sandbox.IsolationBwrap || !got.Network {
		t.Errorf("automatic isolation = %+v, want bwrap with network", got)
	}
	deny := open(t, local.Config{Isolation: sandbox.IsolationBwrap, DenyNetwork: true})
	if got := deny.Capabilities(); got.Network {
		t.Errorf("DenyNetwork still reports network: %+v", got)
	}
}

func TestRoots(t *testing.T) {
	t.Parallel()
	sb := open(t, local.Config{DisableExec: true})
	ctx := context.Background()
	extra := t.TempDir()
	if err := os.WriteFile(filepath.Join(extra, "f.txt"), []byte("extra"), 0o644); err != nil {
		t.Fatal(err)
	}
	notDir := filepath.Join(extra, "f.txt")

	if _, err := sb.ReadFile(ctx, filepath.Join(extra, "f.txt")); !errors.Is(err, sandbox.ErrOutsideRoots) {
		t.Fatalf("read before grant: %v", err)
	}
	for _, bad := range []string{"relative/dir", "/no/such/dir", notDir, "", "/tmp/\x00"} {
		if err := sb.Grant(bad); err == nil {
			t.Errorf("Grant(%q) succeeded", bad)
		}
	}
	if err := sb.Grant(extra); err != nil {
		t.Fatal(err)
	}
	if err := sb.Grant(extra + "/"); err != nil {
		t.Fatalf("second grant: %v", err)
	}
	if got := sb.Roots(); len(got) != 2 || got[0] != sb.Root() || got[1] != extra {
		t.Fatalf("roots = %v", got)
	}
	if b, err := sb.ReadFile(ctx, filepath.Join(extra, "f.txt")); err != nil || string(b) != "extra" {
		t.Fatalf("read in granted root: %q, %v", b, err)
	}
	if err := sb.WriteFile(ctx, filepath.Join(extra, "new/g.txt"), []byte("g")); err != nil {
		t.Fatal(err)
	}
	// An open file survives the revocation of its root.
	rc, err := sb.Open(ctx, filepath.Join(extra, "f.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Revoke(extra); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(rc); err != nil || string(b) != "extra" {
		t.Fatalf("read after revoke of an open file: %q, %v", b, err)
	}
	rc.Close()
	if _, err := sb.ReadFile(ctx, filepath.Join(extra, "f.txt")); !errors.Is(err, sandbox.ErrOutsideRoots) {
		t.Fatalf("read after revoke: %v", err)
	}
	if err := sb.Revoke(extra); !errors.Is(err, sandbox.ErrNotGranted) {
		t.Errorf("second revoke: %v", err)
	}
	if err := sb.Revoke(sb.Root()); !errors.Is(err, sandbox.ErrDefaultRoot) {
		t.Errorf("revoke default: %v", err)
	}
	if err := sb.Revoke("relative"); err == nil {
		t.Error("revoke of a relative path succeeded")
	}
	if got := sb.Roots(); len(got) != 1 {
		t.Errorf("roots after revoke = %v", got)
	}
}

// A symbolic link from one root into another is refused: each root
// confines its own paths, which keeps the rule simple to state.
func TestLinkBetweenRootsRefused(t *testing.T) {
	t.Parallel()
	sb := open(t, local.Config{DisableExec: true})
	extra := t.TempDir()
	if err := os.WriteFile(filepath.Join(extra, "f.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := sb.Grant(extra); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(extra, "f.txt"), filepath.Join(sb.Root(), "l")); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.ReadFile(context.Background(), "l"); !errors.Is(err, sandbox.ErrOutsideRoots) {
		t.Fatalf("read through a link to another root: %v", err)
	}
	// An absolute link is refused even when it points inside its own root.
	if err := os.WriteFile(filepath.Join(sb.Root(), "in.txt"), []byte("in"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(sb.Root(), "in.txt"), filepath.Join(sb.Root(), "abs")); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.ReadFile(context.Background(), "abs"); !errors.Is(err, sandbox.ErrOutsideRoots) {
		t.Fatalf("read through an absolute link: %v", err)
	}
}

func TestFiles(t *testing.T) {
	t.Parallel()
	sb := open(t, local.Config{DisableExec: true})
	ctx := context.Background()
	root := sb.Root()

	if err := sb.WriteFile(ctx, "a/b/c.txt", []byte("abc")); err != nil {
		t.Fatal(err)
	}
	fi, err := sb.Stat(ctx, "a/b/c.txt")
	if err != nil || fi.Size != 3 || fi.IsDir() || fi.Path != filepath.Join(root, "a/b/c.txt") {
		t.Fatalf("stat = %+v, %v", fi, err)
	}
	if b, err := sb.ReadFile(ctx, filepath.Join(root, "a/b/c.txt")); err != nil || string(b) != "abc" {
		t.Fatalf("read by absolute path: %q, %v", b, err)
	}
	if err := os.Symlink("b/c.txt", filepath.Join(root, "a/link")); err != nil {
		t.Fatal(err)
	}
	if got, err := sb.Resolve("a/link"); err != nil || got != filepath.Join(root, "a/b/c.txt") {
		t.Fatalf("resolve link = %q, %v", got, err)
	}
	if got, err := sb.Resolve("a/missing/x.txt"); err != nil || got != filepath.Join(root, "a/missing/x.txt") {
		t.Fatalf("resolve missing = %q, %v", got, err)
	}
	// Writing through an in-root link replaces the file it points to.
	if err := sb.WriteFile(ctx, "a/link", []byte("via link")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a/b/c.txt")); string(b) != "via link" {
		t.Fatalf("target = %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(root, "a/link")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link itself was replaced: %v %v", fi, err)
	}
	if _, err := sb.ReadFile(ctx, "a"); err == nil {
		t.Error("ReadFile of a directory succeeded")
	}
	if err := sb.WriteFile(ctx, "a", []byte("x")); err == nil {
		t.Error("WriteFile over a directory succeeded")
	}
	if _, err := sb.ReadFile(ctx, "nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	// Whole-file reads are bounded.
	big, err := os.Create(filepath.Join(root, "big"))
	if err != nil {
		t.Fatal(err)
	}
	big.Truncate(sandbox.MaxFileSize + 1)
	big.Close()
	if _, err := sb.ReadFile(ctx, "big"); !errors.Is(err, sandbox.ErrTooLarge) {
		t.Errorf("big file: %v", err)
	}
	// Walk: lexical order, links listed but not followed, SkipDir honoured.
	for _, f := range []string{"w/b/1", "w/a/2", "w/skip/3", "w/c"} {
		if err := sb.WriteFile(ctx, f, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../a", filepath.Join(root, "w/link")); err != nil {
		t.Fatal(err)
	}
	var seen []string
	err = sb.Walk(ctx, "w", func(rel string, d fs.DirEntry) error {
		seen = append(seen, rel)
		if rel == "skip" {
			return fs.SkipDir
		}
		return nil
	})
	if want := []string{".", "a", "a/2", "b", "b/1", "c", "link", "skip"}; err != nil || !slices.Equal(seen, want) {
		t.Fatalf("walk = %v, %v; want %v", seen, err, want)
	}
	if err := sb.Walk(ctx, "w/c", func(string, fs.DirEntry) error { return nil }); err == nil {
		t.Error("walk of a file succeeded")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := sb.Walk(cctx, "w", func(string, fs.DirEntry) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("walk with a cancelled context: %v", err)
	}
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	sb := open(t, local.Config{ReadOnly: true, DisableExec: true})
	if err := sb.WriteFile(context.Background(), "x", nil); !errors.Is(err, sandbox.ErrUnsupported) {
		t.Fatalf("write in a read-only sandbox: %v", err)
	}
	if _, err := sb.Exec(context.Background(), sandbox.Cmd{Args: []string{"true"}}); !errors.Is(err, sandbox.ErrUnsupported) {
		t.Fatalf("exec without exec: %v", err)
	}
}

func TestExec(t *testing.T) {
	t.Parallel()
	sb := open(t, local.Config{})
	ctx := context.Background()
	if err := os.Mkdir(filepath.Join(sb.Root(), "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		cmd      sandbox.Cmd
		code     int
		out      string
		timedOut bool
		wantErr  string
	}{
		{name: "ok", cmd: sandbox.Cmd{Args: []string{"sh", "-c", "echo hi"}}, out: "hi\n"},
		{name: "exit code", cmd: sandbox.Cmd{Args: []string{"sh", "-c", "exit 9"}}, code: 9},
		{name: "signal", cmd: sandbox.Cmd{Args: []string{"sh", "-c", "kill -9 $$"}}, code: 137},
		{name: "combined", cmd: sandbox.Cmd{Args: []string{"sh", "-c", "echo a; echo b >&2; echo c"}}, out: "a\nb\nc\n"},
		{name: "cwd", cmd: sandbox.Cmd{Args: []string{"sh", "-c", "basename $PWD"}, Dir: "sub"}, out: "sub\n"},
		{name: "env", cmd: sandbox.Cmd{Args: []string{"sh", "-c", "echo $A$B"}, Env: map[string]string{"A": "1", "B": "2"}}, out: "12\n"},
		{name: "home is the root", cmd: sandbox.Cmd{Args: []string{"sh", "-c", "cd && pwd -P"}}, out: sb.Root() + "\n"},
		{name: "timeout", cmd: sandbox.Cmd{Args: []string{"sleep", "30"}, Timeout: 100 * time.Millisecond}, code: 124, timedOut: true},
		{name: "no program", cmd: sandbox.Cmd{}, wantErr: "no program"},
		{name: "missing program", cmd: sandbox.Cmd{Args: []string{"no-such-program-here"}}, wantErr: "start no-such-program-here"},
		{name: "cwd outside", cmd: sandbox.Cmd{Args: []string{"true"}, Dir: "/"}, wantErr: "outside the workspace roots"},
		{name: "cwd is a file", cmd: sandbox.Cmd{Args: []string{"true"}, Dir: "/dev/null"}, wantErr: "outside"},
		{name: "bad env name", cmd: sandbox.Cmd{Args: []string{"true"}, Env: map[string]string{"A=B": "x"}}, wantErr: "invalid"},
		{name: "NUL argument", cmd: sandbox.Cmd{Args: []string{"echo", "a\x00b"}}, wantErr: "NUL"},
		{name: "stdin", cmd: sandbox.Cmd{Args: []string{"sh", "-c", "read x; echo got $x"}, Stdin: strings.NewReader("in\n")}, out: "got in\n"},
		{name: "no stdin", cmd: sandbox.Cmd{Args: []string{"cat"}}, out: ""},
		{name: "stdin not read", cmd: sandbox.Cmd{Args: []string{"true"}, Stdin: bytes.NewReader(make([]byte, 1<<20))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out testproc.Buffer
			tc.cmd.Stdout = &out
			res, err := sb.Exec(ctx, tc.cmd)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != tc.code || res.TimedOut != tc.timedOut || out.String() != tc.out {
				t.Fatalf("result %+v, output %q; want code %d, timed out %v, output %q", res, out.String(), tc.code, tc.timedOut, tc.out)
			}
		})
	}
}

func TestExecSeparateStderr(t *testing.T) {
	t.Parallel()
	sb := open(t, local.Config{})
	var out, errOut testproc.Buffer
	if _, err := sb.Exec(context.Background(), sandbox.Cmd{Args: []string{"sh", "-c", "echo o; echo e >&2"}, Stdout: &out, Stderr: &errOut}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "o\n" || errOut.String() != "e\n" {
		t.Fatalf("stdout %q, stderr %q", out.String(), errOut.String())
	}
}

func TestExecEnvKeepsHostSecretsOut(t *testing.T) {
	t.Setenv("HITCH_TEST_SECRET", "hunter2")
	isos := []sandbox.Isolation{sandbox.IsolationNone}
	if bwrapUsable(t) {
		isos = append(isos, sandbox.IsolationBwrap)
	}
	for _, iso := range isos {
		sb := open(t, local.Config{Isolation: iso})
		var out testproc.Buffer
		if _, err := sb.Exec(context.Background(), sandbox.Cmd{Args: []string{"env"}, Stdout: &out}); err != nil {
			t.Fatal(err)
		}
		env := out.String()
		if strings.Contains(env, "hunter2") || strings.Contains(env, "HITCH_") || !strings.Contains(env, "PATH=") {
			t.Fatalf("%s: environment:\n%s", iso, env)
		}
	}
}

// stopWriter refuses output after the first write, and signals it.
type stopWriter struct {
	once  sync.Once
	first chan struct{}
	fail  bool
}

func (w *stopWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.first) })
	if w.fail {
		return 0, errors.New("enough")
	}
	return len(p), nil
}

func TestExecStoppedByWriter(t *testing.T) {
	t.Parallel()
	sb := open(t, local.Config{})
	w := &stopWriter{first: make(chan struct{}), fail: true}
	res, err := sb.Exec(context.Background(), sandbox.Cmd{Args: []string{"sh", "-c", "while :; do echo y; done"}, Stdout: w})
	if err != nil || !res.Stopped {
		t.Fatalf("result %+v, err %v", res, err)
	}
}

func TestExecCancelled(t *testing.T) {
	t.Parallel()
	sb := open(t, local.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	w := &stopWriter{first: make(chan struct{})}
	go func() { <-w.first; cancel() }()
	_, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"sh", "-c", "echo started; sleep 30"}, Stdout: w})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}

func TestBwrapConfinesWrites(t *testing.T) {
	t.Parallel()
	if !bwrapUsable(t) {
		t.Skip("bwrap not usable here")
	}
	sb := open(t, local.Config{Isolation: sandbox.IsolationBwrap})
	// /tmp is private inside bwrap, so the outside directory lives
	// elsewhere on the host.
	outside, err := os.MkdirTemp("/var/tmp", "hitch-outside-")
	if err != nil {
		t.Skipf("no host directory outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	granted := t.TempDir()
	if err := sb.Grant(granted); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`touch %[1]s/escaped /usr/escaped; echo inside > in.txt; echo g > %[2]s/g.txt; echo tmp > /tmp/private; ls /tmp`, outside, granted)
	var out testproc.Buffer
	res, err := sb.Exec(context.Background(), sandbox.Cmd{Args: []string{"sh", "-c", script}, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Fatal("a command wrote outside the roots under bwrap")
	}
	if _, err := os.Stat("/usr/escaped"); err == nil {
		os.Remove("/usr/escaped")
		t.Fatal("a command wrote to /usr under bwrap")
	}
	if !strings.Contains(out.String(), "Read-only file system") {
		t.Errorf("output %q, exit %d: want a read-only refusal", out.String(), res.ExitCode)
	}
	for _, f := range []string{filepath.Join(sb.Root(), "in.txt"), filepath.Join(granted, "g.txt")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("write to a root failed: %v", err)
		}
	}
	if _, err := os.Stat("/tmp/private"); err == nil {
		t.Error("/tmp inside bwrap is the host's")
	}
}

func TestBwrapDenyNetwork(t *testing.T) {
	t.Parallel()
	if !bwrapUsable(t) {
		t.Skip("bwrap not usable here")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash for /dev/tcp")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	script := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", port)
	for _, deny := range []bool{false, true} {
		sb := open(t, local.Config{Isolation: sandbox.IsolationBwrap, DenyNetwork: deny})
		var out testproc.Buffer
		if _, err := sb.Exec(context.Background(), sandbox.Cmd{Args: []string{"bash", "-c", script}, Stdout: &out}); err != nil {
			t.Fatal(err)
		}
		if connected := strings.Contains(out.String(), "connected"); connected == deny {
			t.Errorf("DenyNetwork %v: output %q", deny, out.String())
		}
	}
}

// Without bwrap on PATH, automatic isolation falls back to none and an
// explicit request for bwrap fails.
func TestWithoutBwrap(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	sb, err := local.New(local.Config{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if got := sb.Capabilities(); got.Isolation != sandbox.IsolationNone || !got.Exec ||
		!strings.Contains(got.Warning, "without isolation") || !strings.Contains(got.Warning, "bwrap is not usable") {
		t.Fatalf("capabilities without bwrap = %+v", got)
	}
	if _, err := local.New(local.Config{Root: t.TempDir(), Isolation: sandbox.IsolationBwrap}); err == nil || !strings.Contains(err.Error(), "bwrap is not usable") {
		t.Fatalf("explicit bwrap without bwrap: %v", err)
	}
	if err := local.CheckBwrap(); err == nil {
		t.Fatal("CheckBwrap found bwrap on an empty PATH")
	}
}

// RequireIsolation without a usable bwrap refuses commands, says why, and
// leaves the files usable.
func TestRequireIsolationWithoutBwrap(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, deny := range []bool{false, true} {
		sb, err := local.New(local.Config{Root: t.TempDir(), RequireIsolation: true, DenyNetwork: deny})
		if err != nil {
			t.Fatal(err)
		}
		defer sb.Close()
		got := sb.Capabilities()
		if got.Exec || got.Isolation != "" || !strings.Contains(got.Warning, "isolation is required but bwrap is not usable") {
			t.Fatalf("capabilities = %+v", got)
		}
		_, err = sb.Exec(context.Background(), sandbox.Cmd{Args: []string{"true"}})
		if !errors.Is(err, sandbox.ErrUnsupported) || !strings.Contains(err.Error(), "isolation is required") {
			t.Fatalf("exec error = %v", err)
		}
		if err := sb.WriteFile(context.Background(), "f", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRequireIsolationWithBwrap(t *testing.T) {
	t.Parallel()
	if !bwrapUsable(t) {
		t.Skip("bwrap not usable here")
	}
	if err := local.CheckBwrap(); err != nil {
		t.Fatalf("CheckBwrap: %v", err)
	}
	sb, err := local.New(local.Config{Root: t.TempDir(), RequireIsolation: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if got := sb.Capabilities(); !got.Exec || got.Isolation != sandbox.IsolationBwrap || got.Warning != "" {
		t.Fatalf("capabilities = %+v", got)
	}
}

// TestBwrapProbedOncePerProcess: sandboxes opened again and again with one
// view start one bwrap probe between them, and a sandbox without commands
// starts none. Not parallel, so that no other test probes meanwhile.
func TestBwrapProbedOncePerProcess(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not installed")
	}
	// A read path of its own gives a view no other test probed.
	cfg := local.Config{Root: t.TempDir(), ReadPaths: []string{t.TempDir()}}
	before := local.ProbeCount()
	for range 5 {
		sb, err := local.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		sb.Close()
	}
	if n := local.ProbeCount() - before; n != 1 {
		t.Fatalf("%d probes for five sandboxes with one view, want 1", n)
	}
	cfg.ReadPaths, cfg.DisableExec = []string{t.TempDir()}, true
	sb, err := local.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sb.Close()
	if n := local.ProbeCount() - before; n != 1 {
		t.Fatalf("a sandbox without commands probed bwrap (%d probes)", n)
	}
}
