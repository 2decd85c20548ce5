package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hitch-dev/hitch/store"
)

// TestRowLockOrder checks that the statements that lock many runs at once
// (a group of appends, a renewal of many leases) lock them in one order,
// that of their ids, whatever the order of the table or of the request:
// two of them sharing runs would otherwise deadlock, and PostgreSQL takes a
// second to break a deadlock. The run of the greater id is held by another
// transaction; while the statement waits for it, the run of the smaller id
// must already be locked.
func TestRowLockOrder(t *testing.T) {
	t.Parallel()
	s := openPlanStore(t)
	ctx := t.Context()
	tokens := map[string]int64{}
	for _, id := range []string{"b", "a"} { // the table's order is not the ids'
		startRuns(t, s, store.RunCreateParams{ID: id, Agent: "x"})
		tokens[id] = claimToken(t, s, id)
	}
	after := int64(1)
	for _, tc := range []struct {
		name string
		lock func() error
	}{
		{"group", func() error {
			var g []*groupReq
			for _, id := range []string{"b", "a"} {
				g = append(g, &groupReq{p: store.JournalAppendParams{RunID: id, Token: tokens[id], After: after,
					Entries: []store.EntryInput{{Kind: "step", Data: json.RawMessage(`{}`)}}}})
			}
			after++
			rows, err := s.pool.Query(ctx, groupSQL, s.groupArgs(g)...)
			if err != nil {
				return err
			}
			rows.Close()
			return rows.Err()
		}},
		{"renew", func() error {
			_, err := s.LeaseRenewMany(ctx, store.LeaseRenewManyParams{Owner: "me", TTL: time.Hour,
				Leases: []store.LeaseHeld{{RunID: "b", Token: tokens["b"]}, {RunID: "a", Token: tokens["a"]}}})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkLockOrder(t, s, tc.lock) })
	}
}

// checkLockOrder holds run b, lets lock run and, once it waits for b,
// checks that run a is locked.
func checkLockOrder(t *testing.T, s *Store, lock func() error) {
	ctx := t.Context()
	// A new version of run a puts it after run b in the table.
	if _, err := s.pool.Exec(ctx, `UPDATE hitch_runs SET updated_at = updated_at WHERE id = 'a'`); err != nil {
		t.Fatal(err)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var holder int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid() FROM hitch_runs WHERE id = 'b' FOR UPDATE`).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- lock() }()
	for waiting := false; !waiting; {
		select {
		case err := <-done:
			t.Fatalf("the statement ended while run b was held: %v", err)
		default:
		}
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid)))`,
			holder).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.pool.Exec(ctx, `SELECT 1 FROM hitch_runs WHERE id = 'a' FOR UPDATE NOWAIT`)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "55P03" {
		t.Errorf("run a while the statement waits for run b: %v, want it locked (55P03)", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
