package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hitch-dev/hitch/sandbox"
)

// Config sets up a local sandbox.
type Config struct {
	// Root is the default root, an existing directory. Required.
	Root string
	// Isolation chooses how commands run: sandbox.IsolationBwrap requires a
	// working bwrap, sandbox.IsolationNone never uses it, and empty picks
	// bwrap when it works and none otherwise.
	Isolation sandbox.Isolation
	// DenyNetwork cuts commands off from the network. It needs bwrap.
	// Default false.
	DenyNetwork bool
	// ReadPaths are host paths, absolute and existing, that commands may
	// read under bwrap, in addition to the system directories and the
	// roots. Without bwrap commands can read whatever the host user can, so
	// ReadPaths has no effect. Default none.
	ReadPaths []string
	// Env is the base environment of commands as KEY=VALUE entries. Default:
	// PATH, HOME, LANG, TERM and TMPDIR only, so that secrets in the host's
	// environment do not leak into commands.
	Env []string
	// ExtraEnv are KEY=VALUE entries added to Env (or its default): the
	// secrets an operator hands to commands. Default none.
	ExtraEnv []string
	// RequireIsolation refuses commands, rather than run them as plain
	// processes, when bwrap is not usable: Capabilities then reports no
	// exec and says why in Warning, and Exec fails with that reason. File
	// operations still work. It conflicts with Isolation "none". Default
	// false: commands fall back to no isolation, and Warning says so.
	RequireIsolation bool
	// DisableExec leaves out command execution. Default false.
	DisableExec bool
	// ReadOnly leaves out file writes. Default false.
	ReadOnly bool
}

// Sandbox is a local sandbox. Build one with New; Close releases it.
type Sandbox struct {
	caps    sandbox.Capabilities
	env     []string
	bwrap   string   // path of bwrap when commands run in it
	view    []string // bwrap arguments that build what commands see
	reaper  bool     // commands without bwrap run through the reaper
	denyNet bool
	execErr error // why commands are refused, when isolation is required but missing

	mu    sync.Mutex
	roots []*rootRef // default root first
}

var _ sandbox.Sandbox = (*Sandbox)(nil)

// rootRef is one root with a count of the operations using it, so Revoke
// can close it only once they are done.
type rootRef struct {
	path    string // canonical absolute path
	root    *os.Root
	refs    int
	revoked bool
}

// New opens a local sandbox on cfg.Root.
func New(cfg Config) (*Sandbox, error) {
	if cfg.Root == "" {
		return nil, errors.New("local sandbox: Root is empty")
	}
	ref, err := openRoot(cfg.Root, true)
	if err != nil {
		return nil, fmt.Errorf("local sandbox: Root: %w", err)
	}
	s := &Sandbox{roots: []*rootRef{ref}}
	s.caps = sandbox.Capabilities{Read: true, Write: !cfg.ReadOnly}
	if cfg.Env != nil {
		s.env = slices.Clone(cfg.Env)
	} else {
		s.env = defaultEnv(ref.path)
	}
	for i, kv := range cfg.ExtraEnv {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			ref.root.Close()
			return nil, fmt.Errorf("local sandbox: ExtraEnv[%d] is not KEY=VALUE", i)
		}
		s.env = append(s.env, kv)
	}
	read, err := readPaths(cfg.ReadPaths)
	if err != nil {
		ref.root.Close()
		return nil, fmt.Errorf("local sandbox: ReadPaths: %w", err)
	}
	if !cfg.DisableExec && execSupported {
		if err := s.setUpExec(cfg, read); err != nil {
			ref.root.Close()
			return nil, fmt.Errorf("local sandbox: %w", err)
		}
	} else if cfg.DenyNetwork {
		ref.root.Close()
		return nil, errors.New("local sandbox: DenyNetwork needs command execution")
	}
	return s, nil
}

// setUpExec chooses how commands run and fills in the capabilities.
func (s *Sandbox) setUpExec(cfg Config, read []string) error {
	var path string
	var bwrapErr error
	switch cfg.Isolation {
	case sandbox.IsolationNone:
		if cfg.RequireIsolation {
			return fmt.Errorf("field RequireIsolation: conflicts with Isolation %q", sandbox.IsolationNone)
		}
	case "", sandbox.IsolationBwrap:
		s.view = bwrapView(read)
		path, bwrapErr = findBwrap(s.view, cfg.DenyNetwork)
		if bwrapErr != nil && cfg.Isolation == sandbox.IsolationBwrap {
			return fmt.Errorf("field Isolation: bwrap is not usable: %w", bwrapErr)
		}
	default:
		return fmt.Errorf("field Isolation: unknown isolation %q (want %q or %q)", cfg.Isolation, sandbox.IsolationNone, sandbox.IsolationBwrap)
	}
	if path == "" && cfg.RequireIsolation {
		// Refuse commands rather than run them unconfined; files still
		// work.
		s.execErr = fmt.Errorf("isolation is required but bwrap is not usable: %w", bwrapErr)
		s.caps.Warning = "commands are refused: " + s.execErr.Error()
		return nil
	}
	if path == "" && cfg.DenyNetwork {
		return errors.New("DenyNetwork needs bwrap isolation, which is not in effect")
	}
	s.caps.Exec = true
	s.caps.Network = !cfg.DenyNetwork
	s.denyNet = cfg.DenyNetwork
	if path != "" {
		s.bwrap = path
		s.caps.Isolation = sandbox.IsolationBwrap
		return nil
	}
	s.view = nil
	s.reaper = reaperUsable()
	s.caps.Isolation = sandbox.IsolationNone
	s.caps.Warning = "commands run without isolation: they can read and write whatever this user can"
	if !s.reaper {
		s.caps.Warning += ", and a process that leaves its process group can outlive the call"
	}
	if bwrapErr != nil {
		s.caps.Warning += " (bwrap is not usable: " + bwrapErr.Error() + ")"
	}
	return nil
}

// CheckBwrap reports whether commands could run under bwrap here, and if
// not, why. It starts bwrap once, as New does.
func CheckBwrap() error {
	if !execSupported {
		return errors.New("commands do not run on this system")
	}
	_, err := findBwrap(bwrapView(nil), false)
	return err
}

// CheckBwrapIn is CheckBwrap with bwrap looked up in dirs, a list of
// directories as PATH spells one (empty: PATH), and returns the program
// it found and started.
func CheckBwrapIn(dirs string) (string, error) {
	if !execSupported {
		return "", errors.New("commands do not run on this system")
	}
	return findBwrapIn(dirs, bwrapView(nil), false)
}

// readPaths checks and canonicalizes Config.ReadPaths.
func readPaths(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if err := checkName(p); err != nil {
			return nil, err
		}
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("%q is not an absolute path", p)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, err
		}
		out = append(out, real)
	}
	return out, nil
}

func defaultEnv(home string) []string {
	env := []string{"HOME=" + home, "TERM=dumb"}
	for _, k := range []string{"PATH", "LANG", "LC_ALL", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if _, ok := os.LookupEnv("PATH"); !ok {
		env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin")
	}
	return env
}

// openRoot canonicalizes dir and opens it. Grants must be absolute; the
// default root may be relative to the process's working directory.
func openRoot(dir string, allowRelative bool) (*rootRef, error) {
	if err := checkName(dir); err != nil {
		return nil, err
	}
	if !allowRelative && !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("%q is not an absolute path", dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	r, err := os.OpenRoot(real)
	if err != nil {
		return nil, err
	}
	return &rootRef{path: real, root: r}, nil
}

// Capabilities reports what the sandbox can do.
func (s *Sandbox) Capabilities() sandbox.Capabilities { return s.caps }

// Root returns the default root.
func (s *Sandbox) Root() string { return s.roots[0].path }

// Roots returns the default root and then the granted roots.
func (s *Sandbox) Roots() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.roots))
	for i, r := range s.roots {
		out[i] = r.path
	}
	return out
}

// Grant adds an existing directory as a root. Granting a root again is a
// no-op.
func (s *Sandbox) Grant(path string) error {
	ref, err := openRoot(path, false)
	if err != nil {
		return fmt.Errorf("grant root: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.roots {
		if r.path == ref.path {
			ref.root.Close()
			return nil
		}
	}
	s.roots = append(s.roots, ref)
	return nil
}

// Revoke removes a granted root. Operations already using it finish first;
// new ones are refused.
func (s *Sandbox) Revoke(path string) error {
	if err := checkName(path); err != nil {
		return fmt.Errorf("revoke root: %w", err)
	}
	if !filepath.IsAbs(path) {
		return fmt.Errorf("revoke root: %q is not an absolute path", path)
	}
	clean := filepath.Clean(path)
	// The directory may be gone by now, so match the given spelling as well
	// as the canonical one.
	real, err := filepath.EvalSymlinks(clean)
	if err != nil {
		real = clean
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.roots {
		if r.path != clean && r.path != real {
			continue
		}
		if i == 0 {
			return fmt.Errorf("revoke root %s: %w", path, sandbox.ErrDefaultRoot)
		}
		s.roots = slices.Delete(s.roots, i, i+1)
		r.revoked = true
		if r.refs == 0 {
			r.root.Close()
		}
		return nil
	}
	return fmt.Errorf("revoke root %s: %w", path, sandbox.ErrNotGranted)
}

// Close releases the roots. Operations after Close fail.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.roots {
		r.revoked = true
		if r.refs == 0 {
			r.root.Close()
		}
	}
	return nil
}

// checkName refuses names no file can have, and names a model is likely to
// have mangled: empty, NUL bytes, invalid UTF-8.
func checkName(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty", sandbox.ErrInvalidPath)
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("%w: %q holds a NUL byte", sandbox.ErrInvalidPath, p)
	case !utf8.ValidString(p):
		return fmt.Errorf("%w: %q is not valid UTF-8", sandbox.ErrInvalidPath, p)
	}
	return nil
}

// target is a path located inside one root.
type target struct {
	ref   *rootRef
	rel   string // clean, relative to ref.path; "." for the root itself
	slash bool   // the caller's path ended in a slash
}

// locate finds the root that holds p, lexically, and takes a reference on
// it; the caller must release it. Symbolic links are judged later, by
// os.Root, when the path is used.
func (s *Sandbox) locate(op, p string) (target, error) {
	if err := checkName(p); err != nil {
		return target{}, &fs.PathError{Op: op, Path: p, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.roots[0].revoked {
		return target{}, &fs.PathError{Op: op, Path: p, Err: fs.ErrClosed}
	}
	abs := filepath.Clean(p)
	if !filepath.IsAbs(p) {
		abs = filepath.Join(s.roots[0].path, p)
	}
	var best *rootRef
	for _, r := range s.roots {
		if within(r.path, abs) && (best == nil || len(r.path) > len(best.path)) {
			best = r
		}
	}
	if best == nil {
		return target{}, &fs.PathError{Op: op, Path: p, Err: sandbox.ErrOutsideRoots}
	}
	rel, err := filepath.Rel(best.path, abs)
	if err != nil {
		return target{}, &fs.PathError{Op: op, Path: p, Err: err}
	}
	best.refs++
	return target{ref: best, rel: rel, slash: strings.HasSuffix(p, "/") && rel != "."}, nil
}

func (s *Sandbox) release(t target) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t.ref.refs--
	if t.ref.revoked && t.ref.refs == 0 && t.ref.root != nil {
		t.ref.root.Close()
	}
}

// within reports whether p is dir or below it; both are clean and absolute.
func within(dir, p string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// name is the path handed to os.Root: a trailing slash is kept so that the
// system refuses a file where the caller asked for a directory.
func (t target) name() string {
	if t.slash {
		return t.rel + "/"
	}
	return t.rel
}

// fail rewrites an error from os.Root to name the caller's path and to turn
// an escape into sandbox.ErrOutsideRoots.
func fail(op, p string, err error) error {
	if err == nil {
		return nil
	}
	if isEscape(err) {
		return &fs.PathError{Op: op, Path: p, Err: sandbox.ErrOutsideRoots}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: op, Path: p, Err: pe.Err}
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return &fs.PathError{Op: op, Path: p, Err: le.Err}
	}
	return &fs.PathError{Op: op, Path: p, Err: err}
}

// isEscape recognizes os.Root's refusal of a path that leaves it. The
// standard library does not export that error, so its text is matched.
func isEscape(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}
