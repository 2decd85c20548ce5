package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/store"
)

// benchEntry is about the size of a typical journal entry: a tool result
// of a few hundred bytes of JSON.
var benchEntry = json.RawMessage(fmt.Sprintf(
	`{"type":"tool_result","call_id":"call_0123456789","tool":"read","status":"settled","output":%q}`,
	strings.Repeat("lorem ipsum ", 17)))

// BenchAppend measures a store's write path: runners runs, each leased and
// appended to by a runner of its own, as runners do; one op is one
// JournalAppend of two entries of a typical size under the lease. It
// reports appends/s beside the time and allocations of an op.
func BenchAppend(b *testing.B, s store.Store, runners int) {
	ctx := context.Background()
	leases := make([]store.Lease, runners)
	for i := range leases {
		id := fmt.Sprint("run-", i)
		if _, _, err := s.RunCreate(ctx, store.RunCreateParams{ID: id, Agent: "bench",
			Entries: []store.EntryInput{{Kind: "start", Data: benchEntry}}}); err != nil {
			b.Fatal(err)
		}
		ls, err := s.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "bench", TTL: time.Hour, RunID: id})
		if err != nil {
			b.Fatal(err)
		}
		leases[i] = ls[0]
	}
	es := []store.EntryInput{{Kind: "tool.started", Data: benchEntry}, {Kind: "tool.settled", Data: benchEntry}}

	var (
		next atomic.Int64 // appends handed out so far
		wg   sync.WaitGroup
		errs = make(chan error, runners)
	)
	b.ReportAllocs()
	b.ResetTimer()
	for _, l := range leases {
		wg.Go(func() {
			pos := l.Run.Position
			for next.Add(1) <= int64(b.N) {
				if _, err := s.JournalAppend(ctx, store.JournalAppendParams{RunID: l.Run.ID, Token: l.Token,
					After: pos, Entries: es}); err != nil {
					errs <- err
					return
				}
				pos += int64(len(es))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}
