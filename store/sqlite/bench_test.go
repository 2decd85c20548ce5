package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hitch-dev/hitch/store/storetest"
)

// BenchmarkAppend measures hitch's own write path: JournalAppend of two
// entries under a lease, through the group-committing writer. One op is one
// append call (see storetest.BenchAppend). Run with -tags ncruces to
// measure the other SQL driver.
func BenchmarkAppend(b *testing.B) {
	for _, mode := range []Sync{SyncFull, SyncNormal} {
		for _, runners := range []int{1, 64} {
			name := fmt.Sprintf("driver=%s/sync=%s/runners=%d", driverLabel, mode, runners)
			b.Run(name, func(b *testing.B) {
				s, err := Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), WithSync(mode))
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				storetest.BenchAppend(b, s, runners)
			})
		}
	}
}

// BenchmarkOpen opens and closes an existing store at this build's schema:
// what every command that touches the store pays before its first
// statement. One op is one Open and one Close.
func BenchmarkOpen(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s, err := Open(context.Background(), path)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
