//go:build unix

package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// lockOpen serialises the opening steps (the switch to WAL and the
// migration) of hitch processes creating or upgrading the store at path,
// with an flock on the file itself; opening a current store takes no lock. SQLite's own locks are fcntl locks, which an flock neither takes
// nor blocks, so running stores never see it. Without it, connections of
// several processes creating one new file race through SQLite's switch to
// WAL and some fail with busy or I/O errors its busy handler does not cover.
// It waits at most timeout. The file is created if missing, as Open would.
func lockOpen(ctx context.Context, path string, timeout time.Duration) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			var once sync.Once
			return func() { once.Do(func() { f.Close() }) }, nil // closing drops the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().Add(pause).After(deadline) {
			f.Close()
			return nil, fmt.Errorf("wait for other processes opening the store: %w", err)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}
