//go:build unix

package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hitch-dev/hitch/sandbox"
)

const execSupported = true

// drainGrace bounds how long Exec waits, after killing the process group,
// for output pipes to close. A process that left the group (setsid) can hold
// them open; after the grace its output is abandoned.
const drainGrace = 2 * time.Second

// goneGrace bounds how long Exec waits for killed processes to finish dying.
const goneGrace = 5 * time.Second

// findBwrap finds bwrap and checks that it works here, with view. The
// probe's answer is kept for the life of the process, one per program,
// view and network setting: a probe starts a process, and a node that
// opens a sandbox for every run it drives must not start one each time.
func findBwrap(view []string, denyNet bool) (string, error) {
	return findBwrapIn("", view, denyNet)
}

// findBwrapIn is findBwrap looking for bwrap in dirs, a list of
// directories as PATH spells one; empty means PATH.
func findBwrapIn(dirs string, view []string, denyNet bool) (string, error) {
	path, err := lookBwrap(dirs)
	if err != nil {
		return "", err
	}
	key := path + "\x00" + strings.Join(view, "\x00") + "\x00" + strconv.FormatBool(denyNet)
	v, _ := probes.LoadOrStore(key, &probe{})
	p := v.(*probe)
	p.once.Do(func() {
		probeCount.Add(1)
		p.err = probeBwrap(path, view, denyNet)
	})
	if p.err != nil {
		return "", p.err
	}
	return path, nil
}

// lookBwrap finds the bwrap program in dirs, or in PATH when dirs is
// empty.
func lookBwrap(dirs string) (string, error) {
	if dirs == "" {
		// Looked up once per PATH: a config of hundreds of agents opens a
		// sandbox for each, and each lookup stats every directory of PATH.
		pathEnv := os.Getenv("PATH")
		if v, ok := lookups.Load(pathEnv); ok {
			l := v.(lookup)
			return l.path, l.err
		}
		path, err := exec.LookPath("bwrap")
		lookups.Store(pathEnv, lookup{path, err})
		return path, err
	}
	for _, d := range filepath.SplitList(dirs) {
		p := filepath.Join(d, "bwrap")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("bwrap: not found in %s", dirs)
}

// lookup is the answer of looking for bwrap in one PATH.
type lookup struct {
	path string
	err  error
}

var lookups sync.Map // PATH → lookup

// probe is one view's answer of findBwrap.
type probe struct {
	once sync.Once
	err  error
}

var (
	probes     sync.Map // view key → *probe
	probeCount atomic.Int64
)

// probeBwrap runs a trivial command in bwrap: installed is not the same as
// usable (user namespaces may be disabled).
func probeBwrap(path string, view []string, denyNet bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := append(bwrapArgs(view, nil, "/", denyNet), "--", "true")
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = defaultEnv("/")
	// Away from the caller's terminal, as every command is: a Ctrl-C that
	// killed the probe would leave bwrap judged unusable for the life of
	// the process.
	cmd.SysProcAttr = sysProcAttr(false)
	release, err := startSlot(ctx)
	if err != nil {
		return err
	}
	out, err := cmd.CombinedOutput()
	release()
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// MaxStarting bounds the processes the sandboxes of one process start at
// once (commands and bwrap probes): a burst of runs that each start a
// command queues here instead of forking all at once.
const MaxStarting = 16

var starting = make(chan struct{}, MaxStarting)

// startSlot waits for a slot to start a process in; release gives it back
// once the process has started.
func startSlot(ctx context.Context) (release func(), err error) {
	select {
	case starting <- struct{}{}:
		return func() { <-starting }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait to start a process: %w", ctx.Err())
	}
}

// systemDirs are the host directories a command sees under bwrap, read-only,
// when they exist: what programs need to run, and nothing that belongs to a
// user.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/nix/store"}

// SystemDirs are the host directories a command reads under bwrap,
// read-only, besides its roots and the configured read paths; files
// under /etc that other users could not read are hidden.
func SystemDirs() []string { return slices.Clone(systemDirs) }

// secretFiles are hidden under bwrap even when they are readable by others.
var secretFiles = []string{"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d", "/etc/ssl/private", "/etc/security/opasswd"}

// maxEtcEntries bounds the scan of /etc for files to hide.
const maxEtcEntries = 20000

// bwrapView returns the bwrap arguments that build what commands see: the
// system directories, read-only, with the files under /etc that other users
// could not read hidden (a file reads as empty, a directory as empty),
// then the extra read paths. /dev, /proc and /tmp are private.
//
// The host's part of the view is read once per process (see hostView): a
// config of hundreds of agents builds hundreds of views.
func bwrapView(read []string) []string {
	host := hostView()
	args := slices.Clone(host.system)
	// Paths in the private mounts are bound after those are made.
	var late []string
	for _, p := range read {
		if within("/tmp", p) || within("/dev", p) || within("/proc", p) {
			late = append(late, "--ro-bind", p, p)
			continue
		}
		args = append(args, "--ro-bind", p, p)
	}
	args = append(args, host.hidden...)
	args = append(args, "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp")
	return append(args, late...)
}

// view is the host's part of a bwrap view: the system directories (and
// where resolv.conf really lives), then what hides the secrets under /etc.
type view struct {
	system, hidden []string
}

// hostView reads the host's part of the view once per process.
var hostView = sync.OnceValue(func() view {
	var v view
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if to, err := os.Readlink(d); err == nil {
				v.system = append(v.system, "--symlink", to, d)
			}
		case fi.IsDir():
			v.system = append(v.system, "--ro-bind", d, d)
		}
	}
	// resolv.conf is often a link to /run, which is not in the view.
	if real, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && real != "/etc/resolv.conf" && !inView(real) {
		v.system = append(v.system, "--ro-bind", real, real)
	}
	for _, p := range hiddenEtc() {
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			v.hidden = append(v.hidden, "--tmpfs", p, "--remount-ro", p)
		} else if err == nil && fi.Mode().IsRegular() {
			v.hidden = append(v.hidden, "--ro-bind", "/dev/null", p)
		}
	}
	return v
})

// inView reports whether p lies under one of the system directories.
func inView(p string) bool {
	for _, d := range systemDirs {
		if within(d, p) {
			return true
		}
	}
	return false
}

// hiddenEtc lists the secret files and whatever under /etc other users may
// not read: shadow files, host keys, private keys, sudoers and the like.
// The walk is done once per process.
var hiddenEtc = sync.OnceValue(walkEtc)

func walkEtc() []string {
	var out []string
	for _, f := range secretFiles {
		if _, err := os.Lstat(f); err == nil {
			out = append(out, f)
		}
	}
	n := 0
	filepath.WalkDir("/etc", func(p string, d fs.DirEntry, err error) error {
		if n++; n > maxEtcEntries {
			return fs.SkipAll
		}
		if err != nil || p == "/etc" || d.Type()&fs.ModeSymlink != 0 || slices.Contains(out, p) {
			if d != nil && d.IsDir() && p != "/etc" {
				return fs.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		perm := fi.Mode().Perm()
		switch {
		case d.IsDir() && perm&0o005 != 0o005:
			out = append(out, p)
			return fs.SkipDir
		case fi.Mode().IsRegular() && perm&0o004 == 0:
			out = append(out, p)
		}
		return nil
	})
	return out
}

// bwrapArgs builds a bwrap command line on view: the roots are bound
// writable on top, and the pid namespace with --die-with-parent makes the
// whole tree die with bwrap.
func bwrapArgs(view, roots []string, dir string, denyNet bool) []string {
	args := []string{"--die-with-parent", "--unshare-pid"}
	if denyNet {
		args = append(args, "--unshare-net")
	}
	args = append(args, view...)
	for _, r := range roots {
		args = append(args, "--bind", r, r)
	}
	return append(args, "--chdir", dir)
}

// Exec runs a command in its own process group and waits for the group to
// be gone.
func (s *Sandbox) Exec(ctx context.Context, c sandbox.Cmd) (sandbox.Result, error) {
	if !s.caps.Exec {
		if s.execErr != nil {
			return sandbox.Result{}, fmt.Errorf("exec: %w: %w", sandbox.Unsupported(sandbox.CapExec), s.execErr)
		}
		return sandbox.Result{}, fmt.Errorf("exec: %w", sandbox.Unsupported(sandbox.CapExec))
	}
	if len(c.Args) == 0 || c.Args[0] == "" {
		return sandbox.Result{}, errors.New("exec: no program given")
	}
	for _, a := range c.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return sandbox.Result{}, fmt.Errorf("exec: argument %q holds a NUL byte", a)
		}
	}
	base := s.env
	if s.bwrap != "" {
		// /tmp is the one writable scratch place inside bwrap.
		base = append(slices.DeleteFunc(slices.Clone(base), func(e string) bool { return strings.HasPrefix(e, "TMPDIR=") }), "TMPDIR=/tmp")
	}
	env, err := mergeEnv(base, c.Env)
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("exec: %w", err)
	}
	dir, err := s.workDir(c.Dir)
	if err != nil {
		return sandbox.Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return sandbox.Result{}, fmt.Errorf("exec: %w", err)
	}

	argv := c.Args
	reaper := false
	switch {
	case s.bwrap != "":
		argv = append(append([]string{s.bwrap}, bwrapArgs(s.view, s.Roots(), dir, s.denyNet)...), "--")
		argv = append(argv, c.Args...)
	case s.reaper:
		path, err := programPath(c.Args[0], dir)
		if err != nil {
			return sandbox.Result{}, fmt.Errorf("start %s: %w", c.Args[0], err)
		}
		argv = reaperArgv(path, c.Args)
		env = append(env, reaperEnv+"="+strconv.Itoa(os.Getpid()))
		reaper = true
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = c.Stdin
	cmd.SysProcAttr = sysProcAttr(reaper)

	var pipes []*os.File // read ends
	var sinks []io.Writer
	outR, outW, err := os.Pipe()
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("exec: %w", err)
	}
	pipes, sinks = append(pipes, outR), append(sinks, c.Stdout)
	writeEnds := []*os.File{outW}
	cmd.Stdout, cmd.Stderr = outW, outW
	if c.Stderr != nil {
		errR, errW, err := os.Pipe()
		if err != nil {
			outR.Close()
			outW.Close()
			return sandbox.Result{}, fmt.Errorf("exec: %w", err)
		}
		pipes, sinks = append(pipes, errR), append(sinks, c.Stderr)
		writeEnds = append(writeEnds, errW)
		cmd.Stderr = errW
	}

	release, err := startSlot(ctx)
	if err != nil {
		for _, f := range append(pipes, writeEnds...) {
			f.Close()
		}
		return sandbox.Result{}, fmt.Errorf("exec: %w", err)
	}
	start := time.Now()
	err = cmd.Start()
	release()
	for _, w := range writeEnds {
		w.Close()
	}
	if err != nil {
		for _, r := range pipes {
			r.Close()
		}
		return sandbox.Result{}, fmt.Errorf("start %s: %w", c.Args[0], err)
	}
	pgid := cmd.Process.Pid

	stopped := make(chan struct{})
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(func() { close(stopped) }) }
	var copiers sync.WaitGroup
	for i, r := range pipes {
		copiers.Go(func() { pump(r, sinks[i], stop) })
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	var timeout <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	// end kills the command. The reaper is asked first, since it alone can
	// find processes that left the group; the group kill backs it up.
	end := func() {
		if reaper {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			t := time.NewTimer(goneGrace)
			defer t.Stop()
			select {
			case err := <-waited:
				waited <- err
				return
			case <-t.C:
			}
		}
		killGroup(pgid)
	}
	var res sandbox.Result
	var ctxErr error
	select {
	case <-waited:
	case <-ctx.Done():
		ctxErr = ctx.Err()
		end()
		<-waited
	case <-timeout:
		res.TimedOut = true
		end()
		<-waited
	case <-stopped:
		res.Stopped = true
		end()
		<-waited
	}
	// The leader is gone; whatever it left running in the background goes
	// too.
	killGroup(pgid)
	drained := make(chan struct{})
	go func() { copiers.Wait(); close(drained) }()
	grace := time.NewTimer(drainGrace)
	select {
	case <-drained:
	case <-grace.C:
		for _, r := range pipes {
			r.Close()
		}
		<-drained
	}
	grace.Stop()
	for _, r := range pipes {
		r.Close()
	}
	waitGone(pgid, goneGrace)
	res.Duration = time.Since(start)

	res.ExitCode = exitCode(cmd.ProcessState)
	if res.TimedOut {
		res.ExitCode = 124
	}
	if ctxErr != nil {
		return res, fmt.Errorf("run %s: %w", c.Args[0], ctxErr)
	}
	return res, nil
}

// programPath finds the program a command names the way exec.Command would:
// on PATH for a bare name, relative to the working directory otherwise.
func programPath(name, dir string) (string, error) {
	if !strings.Contains(name, "/") {
		return exec.LookPath(name)
	}
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	return name, nil
}

// workDir resolves a command's working directory inside the roots.
func (s *Sandbox) workDir(d string) (string, error) {
	if d == "" {
		d = "."
	}
	t, err := s.locate("chdir", d)
	if err != nil {
		return "", err
	}
	defer s.release(t)
	fi, err := t.ref.root.Stat(t.rel)
	if err != nil {
		return "", fail("chdir", d, err)
	}
	if !fi.IsDir() {
		return "", fail("chdir", d, syscall.ENOTDIR)
	}
	real, err := resolve(t)
	return real, fail("chdir", d, err)
}

// pump copies a pipe to its sink until EOF; a sink error asks for the
// command to be stopped and the rest is discarded.
func pump(r *os.File, w io.Writer, stop func()) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 && w != nil {
			if _, werr := w.Write(buf[:n]); werr != nil {
				stop()
				w = nil
			}
		}
		if err != nil {
			return
		}
	}
}

func killGroup(pgid int) {
	// ESRCH (nothing left) is the usual answer after a clean exit.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// mergeEnv overlays extra on base; names must be non-empty and free of '='
// and NUL.
func mergeEnv(base []string, extra map[string]string) ([]string, error) {
	env := slices.Clone(base)
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := extra[k]
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("environment variable name %q is invalid", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, fmt.Errorf("environment variable %s holds a NUL byte", k)
		}
		env = slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") })
		env = append(env, k+"="+v)
	}
	return env, nil
}
