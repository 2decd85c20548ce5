package postgres_test

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
	"github.com/hitch-dev/hitch/store/postgres"
)

// benchEntry is about the size of a typical journal entry: a tool result of
// a few hundred bytes of JSON (the same as the SQLite benchmark's).
var benchEntry = json.RawMessage(fmt.Sprintf(
	`{"type":"tool_result","call_id":"call_0123456789","tool":"read","status":"settled","output":%q}`,
	strings.Repeat("lorem ipsum ", 17)))

// BenchmarkAppend measures hitch's write path on PostgreSQL: JournalAppend
// of two entries under a lease, one fenced statement per call. One op is one
// append call; each runner appends to its own run, as runners do.
func BenchmarkAppend(b *testing.B) {
	for _, runners := range []int{1, 64} {
		for _, conns := range []int{4, 16} {
			b.Run(fmt.Sprintf("runners=%d/conns=%d", runners, conns), func(b *testing.B) {
				benchAppend(b, runners, conns)
			})
		}
	}
}

func benchAppend(b *testing.B, runners, conns int) {
	ctx := context.Background()
	s := open(b, postgres.WithMaxConns(conns))
	defer s.Close()
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
