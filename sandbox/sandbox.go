package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"
)

// Isolation names how commands are kept apart from the host.
type Isolation string

const (
	// IsolationNone runs commands as plain host processes: they can read and
	// write whatever the host user can.
	IsolationNone Isolation = "none"
	// IsolationBwrap runs commands under bubblewrap: they see the system
	// directories read-only, the workspace roots writable, and no other part
	// of the host.
	IsolationBwrap Isolation = "bwrap"
)

// Capabilities says what a sandbox can do. Callers check it instead of
// assuming; an operation the sandbox lacks fails with ErrUnsupported.
type Capabilities struct {
	// Exec: commands can be run.
	Exec bool
	// Read: files can be read, stated and listed.
	Read bool
	// Write: files can be created and replaced.
	Write bool
	// Network: commands can reach the network.
	Network bool
	// Snapshot: the workspace can be saved and restored.
	Snapshot bool
	// Isolation in effect for commands; empty when Exec is false.
	Isolation Isolation
	// Warning, when not empty, is for the operator: what the sandbox does
	// not protect against (commands running without isolation), or why a
	// capability that was asked for is missing.
	Warning string
}

// Capability names, as used in error messages.
const (
	CapExec     = "exec"
	CapRead     = "read"
	CapWrite    = "write"
	CapNetwork  = "network"
	CapSnapshot = "snapshot"
)

// Has reports whether the named capability is present. Unknown names are
// absent.
func (c Capabilities) Has(name string) bool {
	switch name {
	case CapExec:
		return c.Exec
	case CapRead:
		return c.Read
	case CapWrite:
		return c.Write
	case CapNetwork:
		return c.Network
	case CapSnapshot:
		return c.Snapshot
	}
	return false
}

var (
	// ErrOutsideRoots means a path leaves every workspace root, by "..", by
	// an absolute name or through a symbolic link.
	ErrOutsideRoots = errors.New("path is outside the workspace roots")
	// ErrInvalidPath means a path cannot name a file at all: it is empty,
	// holds a NUL byte or is not valid UTF-8.
	ErrInvalidPath = errors.New("invalid path")
	// ErrUnsupported means the sandbox lacks the capability an operation
	// needs.
	ErrUnsupported = errors.New("not supported by this sandbox")
	// ErrTooLarge means a file is bigger than a whole-file operation reads.
	ErrTooLarge = errors.New("file too large")
	// ErrNotGranted means Revoke was given a path that is not a granted
	// root.
	ErrNotGranted = errors.New("not a granted root")
	// ErrDefaultRoot means Revoke was given the default root, which cannot be
	// revoked.
	ErrDefaultRoot = errors.New("the default root cannot be revoked")
)

// MaxFileSize bounds whole-file reads (ReadFile). Larger files are read in
// pieces through Open.
const MaxFileSize = 64 << 20

// FileInfo describes one file.
type FileInfo struct {
	// Path is the resolved absolute path.
	Path    string
	Size    int64
	Mode    fs.FileMode
	ModTime time.Time
}

// IsDir reports whether the file is a directory.
func (fi FileInfo) IsDir() bool { return fi.Mode.IsDir() }

// WalkFunc is called for each entry Walk visits. rel is slash-separated and
// relative to the walked directory ("." for the directory itself). Returning
// fs.SkipDir skips a directory, fs.SkipAll stops the walk, any other error
// stops it and is returned.
type WalkFunc func(rel string, d fs.DirEntry) error

// Cmd is one command to run.
type Cmd struct {
	// Args is the program and its arguments; Args[0] is looked up on PATH.
	Args []string
	// Dir is the working directory, confined to the roots like any path;
	// empty means the default root.
	Dir string
	// Env is added to the sandbox's base environment, replacing variables of
	// the same name.
	Env map[string]string
	// Timeout, when above zero, kills the command after that long; the
	// result then has TimedOut set and exit code 124.
	Timeout time.Duration
	// Stdout receives standard output as it is produced, and standard error
	// too when Stderr is nil. A nil writer discards. A Write error stops the
	// command: its process group is killed and Result.Stopped is set.
	Stdout io.Writer
	// Stderr, when not nil, receives standard error separately.
	Stderr io.Writer
	// Stdin, when not nil, is the command's standard input; otherwise it
	// reads nothing (an immediate end of file).
	Stdin io.Reader
}

// Result is how a command ended.
type Result struct {
	// ExitCode is the process's exit status, 128+n when it died of signal n,
	// and 124 when it timed out.
	ExitCode int
	// TimedOut: the command ran past Cmd.Timeout and was killed.
	TimedOut bool
	// Stopped: an output writer refused more output and the command was
	// killed.
	Stopped bool
	// Duration is the wall time from start to end.
	Duration time.Duration
}

// Sandbox is a workspace that tools act in. Paths may be relative (to the
// default root) or absolute; either way they must stay inside the roots.
// Implementations must be safe for concurrent use.
//
// Every file method may fail with ErrInvalidPath, ErrOutsideRoots or
// ErrUnsupported (checked with errors.Is), or with the file system's own
// errors (fs.ErrNotExist, fs.ErrPermission and so on) wrapped in an
// *fs.PathError.
type Sandbox interface {
	// Capabilities reports what the sandbox can do. It does not change over
	// the sandbox's life.
	Capabilities() Capabilities

	// Root returns the default root, an absolute path. Relative paths
	// resolve against it.
	Root() string
	// Roots returns the default root followed by the granted roots in the
	// order they were granted.
	Roots() []string
	// Grant adds an existing directory, given as an absolute path, as a root.
	// Granting a root again is a no-op. It fails when the path is relative,
	// missing or not a directory.
	Grant(path string) error
	// Revoke removes a granted root; operations already under way finish.
	// It fails with ErrNotGranted for a path that is not a granted root and
	// ErrDefaultRoot for the default root.
	Revoke(path string) error

	// Resolve returns the absolute path that path names once symbolic links
	// inside the roots are followed. The file need not exist; its nearest
	// existing ancestor is resolved.
	Resolve(path string) (string, error)
	// Stat describes a file, following symbolic links inside the roots.
	Stat(ctx context.Context, path string) (FileInfo, error)
	// Open opens a file for reading. The caller closes it.
	Open(ctx context.Context, path string) (io.ReadCloser, error)
	// ReadFile reads a whole file; a file over MaxFileSize fails with
	// ErrTooLarge.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// WriteFile replaces a file with data, creating missing parent
	// directories. The replacement is atomic: readers see the old content
	// or the new, and a file hard-linked elsewhere is detached rather than
	// changed through the link. An existing file keeps its permissions.
	WriteFile(ctx context.Context, path string, data []byte) error
	// Walk visits the tree under dir in lexical order without following
	// symbolic links. Entries it cannot read are skipped.
	Walk(ctx context.Context, dir string, fn WalkFunc) error

	// Exec runs a command and waits for it and every process it started to
	// end; processes left running when the command exits are killed. A
	// non-zero exit is not an error. It fails when the command cannot
	// start, and when ctx ends: every process the command started is killed
	// and the error wraps ctx.Err(). Implementations should also kill them
	// when the calling process dies, and say in Capabilities.Warning where
	// they cannot.
	Exec(ctx context.Context, cmd Cmd) (Result, error)
}

// Unsupported returns an error, matching ErrUnsupported, that names the
// missing capability.
func Unsupported(capability string) error {
	return fmt.Errorf("%w: needs capability %q", ErrUnsupported, capability)
}
