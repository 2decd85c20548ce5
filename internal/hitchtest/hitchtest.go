// Package hitchtest opens runtimes on real SQLite stores for tests, each
// closed when its test ends: the setup that the tests of the root package,
// the config, the server and the console would otherwise each write again.
package hitchtest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// closeTimeout bounds a runtime's close when its test ends.
const closeTimeout = 10 * time.Second

// OpenStore opens the SQLite store at path, closed when the test ends.
func OpenStore(t testing.TB, path string, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return st
}

// Open opens a runtime with cfg, closed when the test ends (before any
// store the test opened earlier, since cleanups run last first).
func Open(t testing.TB, cfg hitch.Config) *hitch.Runtime {
	t.Helper()
	rt, err := hitch.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if err := rt.Close(ctx); err != nil {
			t.Errorf("close runtime: %v", err)
		}
	})
	return rt
}

// New opens a fresh store in the test's temporary folder (with opts) and
// a runtime with cfg on it (cfg.Store is set here); both close when the
// test ends.
func New(t testing.TB, cfg hitch.Config, opts ...sqlite.Option) (*hitch.Runtime, *sqlite.Store) {
	t.Helper()
	st := OpenStore(t, filepath.Join(t.TempDir(), "hitch.db"), opts...)
	cfg.Store = st
	return Open(t, cfg), st
}
