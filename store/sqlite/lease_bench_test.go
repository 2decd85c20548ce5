package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/store"
)

// BenchmarkLeaseRenewMany measures what a node's keeper costs the writer:
// one op renews the leases of 2,000 runs in flight, a batch of
// store.MaxListLimit per call, as the keeper does every renewal period.
func BenchmarkLeaseRenewMany(b *testing.B) {
	const runs = 2000
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	held := make([]store.LeaseHeld, runs)
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for i := range held {
		wg.Go(func() {
			id := fmt.Sprint("run-", i)
			if _, _, err := s.RunCreate(ctx, store.RunCreateParams{ID: id, Agent: "bench",
				Entries: []store.EntryInput{{Kind: "start", Data: json.RawMessage(`{"input":"bench"}`)}}}); err != nil {
				errs <- err
				return
			}
			ls, err := s.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "bench", TTL: time.Hour, RunID: id})
			if err != nil {
				errs <- err
				return
			}
			held[i] = store.LeaseHeld{RunID: id, Token: ls[0].Token}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for i := 0; i < runs; i += store.MaxListLimit {
			got, err := s.LeaseRenewMany(ctx, store.LeaseRenewManyParams{Owner: "bench", TTL: time.Hour,
				Leases: held[i:min(i+store.MaxListLimit, runs)]})
			if err != nil {
				b.Fatal(err)
			}
			if !got[0].Renewed || !got[len(got)-1].Renewed {
				b.Fatal("a held lease was not renewed")
			}
		}
	}
}
