package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hitch-dev/hitch/sandbox"
)

// Resolve returns the absolute path p names once symbolic links inside its
// root are followed; missing trailing components are kept as given.
func (s *Sandbox) Resolve(p string) (string, error) {
	t, err := s.locate("resolve", p)
	if err != nil {
		return "", err
	}
	defer s.release(t)
	real, err := resolve(t)
	return real, fail("resolve", p, err)
}

// resolve finds the nearest existing ancestor of t through os.Root (which
// refuses escapes), canonicalizes it and appends the missing rest.
func resolve(t target) (string, error) {
	cur := t.rel
	var rest []string
	for {
		_, err := t.ref.root.Stat(cur)
		if err == nil {
			break
		}
		if isEscape(err) {
			return "", err
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return "", err
		}
		if cur == "." {
			return "", err
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = filepath.Dir(cur)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(t.ref.path, cur))
	if err != nil {
		return "", err
	}
	// os.Root has just vouched for cur; this guards against a swap between
	// the two lookups.
	if !within(t.ref.path, real) {
		return "", sandbox.ErrOutsideRoots
	}
	return filepath.Join(append([]string{real}, rest...)...), nil
}

// Stat describes a file, following symbolic links inside the roots.
func (s *Sandbox) Stat(ctx context.Context, p string) (sandbox.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return sandbox.FileInfo{}, err
	}
	t, err := s.locate("stat", p)
	if err != nil {
		return sandbox.FileInfo{}, err
	}
	defer s.release(t)
	fi, err := t.ref.root.Stat(t.name())
	if err != nil {
		return sandbox.FileInfo{}, fail("stat", p, err)
	}
	real, err := resolve(t)
	if err != nil {
		return sandbox.FileInfo{}, fail("stat", p, err)
	}
	return sandbox.FileInfo{Path: real, Size: fi.Size(), Mode: fi.Mode(), ModTime: fi.ModTime()}, nil
}

// Open opens a file for reading.
func (s *Sandbox) Open(ctx context.Context, p string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t, err := s.locate("open", p)
	if err != nil {
		return nil, err
	}
	defer s.release(t)
	// O_NONBLOCK keeps a FIFO from hanging the open; anything that is not
	// a plain file or a directory is then refused.
	f, err := t.ref.root.OpenFile(t.name(), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fail("open", p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fail("open", p, err)
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: p, Err: fmt.Errorf("%w: not a regular file (%s)", sandbox.ErrInvalidPath, fi.Mode().Type())}
	}
	return f, nil
}

// ReadFile reads a whole file of at most sandbox.MaxFileSize bytes.
func (s *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	rc, err := s.Open(ctx, p)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	f := rc.(*os.File)
	tooLarge := &fs.PathError{Op: "read", Path: p, Err: fmt.Errorf("%w: over %d bytes", sandbox.ErrTooLarge, sandbox.MaxFileSize)}
	if fi, err := f.Stat(); err == nil {
		if fi.IsDir() {
			return nil, &fs.PathError{Op: "read", Path: p, Err: syscall.EISDIR}
		}
		if fi.Size() > sandbox.MaxFileSize {
			return nil, tooLarge
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, sandbox.MaxFileSize+1))
	if err != nil {
		return nil, fail("read", p, err)
	}
	if len(b) > sandbox.MaxFileSize {
		return nil, tooLarge
	}
	return b, nil
}

// WriteFile replaces a file atomically: the data goes to a temporary file in
// the same directory, which is then renamed over the target. A symbolic link
// inside the root is followed, so the file it points to is replaced.
func (s *Sandbox) WriteFile(ctx context.Context, p string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !s.caps.Write {
		return &fs.PathError{Op: "write", Path: p, Err: sandbox.Unsupported(sandbox.CapWrite)}
	}
	t, err := s.locate("write", p)
	if err != nil {
		return err
	}
	defer s.release(t)
	if t.slash {
		return &fs.PathError{Op: "write", Path: p, Err: fmt.Errorf("%w: it ends in a slash, so it names a directory", sandbox.ErrInvalidPath)}
	}
	if t.rel == "." {
		return &fs.PathError{Op: "write", Path: p, Err: syscall.EISDIR}
	}
	real, err := resolve(t)
	if err != nil {
		return fail("write", p, err)
	}
	rel, err := filepath.Rel(t.ref.path, real)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return &fs.PathError{Op: "write", Path: p, Err: sandbox.ErrOutsideRoots}
	}
	root := t.ref.root
	dir := filepath.Dir(rel)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return fail("write", p, err)
	}
	mode := fs.FileMode(0o644)
	if fi, err := root.Lstat(rel); err == nil {
		if fi.IsDir() {
			return &fs.PathError{Op: "write", Path: p, Err: syscall.EISDIR}
		}
		if fi.Mode().IsRegular() {
			mode = fi.Mode().Perm()
		}
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(dir, "."+filepath.Base(rel)+".tmp-"+hex.EncodeToString(rnd[:]))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fail("write", p, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode) // the umask may have narrowed it
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		root.Remove(tmp)
		return fail("write", p, err)
	}
	return nil
}

// Walk visits the tree under dir in lexical order without following
// symbolic links; unreadable entries are skipped.
func (s *Sandbox) Walk(ctx context.Context, dir string, fn sandbox.WalkFunc) error {
	t, err := s.locate("walk", dir)
	if err != nil {
		return err
	}
	defer s.release(t)
	fi, err := t.ref.root.Stat(t.rel)
	if err != nil {
		return fail("walk", dir, err)
	}
	if !fi.IsDir() {
		return &fs.PathError{Op: "walk", Path: dir, Err: syscall.ENOTDIR}
	}
	base := filepath.ToSlash(t.rel)
	err = fs.WalkDir(t.ref.root.FS(), base, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if p == base {
				return err
			}
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		rel := "."
		if p != base {
			if base == "." {
				rel = p
			} else {
				rel = strings.TrimPrefix(p, base+"/")
			}
		}
		return fn(path.Clean(rel), d)
	})
	if err != nil {
		if errors.Is(err, ctx.Err()) {
			return err
		}
		return fail("walk", dir, err)
	}
	return nil
}
