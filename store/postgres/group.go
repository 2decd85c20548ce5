package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// Group commit. A node's runners append all the time, each its own run; in
// a statement of its own each append is a round trip, a transaction and a
// WAL flush. The appends that charge no budget and do not end their run go
// to one goroutine instead, which sends whatever is queued (up to
// MaxGroupAppends, one per run) as one statement: one round trip, one
// transaction, one flush. The statement fences each run as appendSQL does,
// so a refused append writes nothing and does not stop the others.

// MaxGroupAppends bounds the appends of one grouped statement.
const MaxGroupAppends = 64

// groupQueue bounds the appends waiting for the grouping goroutine; a
// runner past it waits to queue.
const groupQueue = 4 * MaxGroupAppends

// groupSQL appends for many runs in one statement. The requests come as
// parallel arrays ($2–$7: run, token, position, count, status, wake); the
// entries as parallel arrays too ($8–$11: run, its entry's place, kind,
// data). It first locks its runs in the order of their ids, as every
// statement that locks many runs does (renewManySQL): in whatever order a
// join met them, two such statements sharing runs could deadlock, and
// PostgreSQL only breaks a deadlock after deadlock_timeout (a second).
const groupSQL = `
WITH q AS (
	SELECT * FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::int[], $6::text[], $7::timestamptz[])
		AS q (id, token, after, n, status, wake)
), l AS MATERIALIZED (
	SELECT seq FROM hitch_runs WHERE id = ANY ($2::text[]) ORDER BY id FOR NO KEY UPDATE
), r AS (
	UPDATE hitch_runs h SET
		position = q.after + q.n,
		status = coalesce(q.status, h.status),
		lease_owner = CASE WHEN q.status IS NULL OR q.status = 'running' THEN h.lease_owner ELSE '' END,
		lease_expires = CASE WHEN q.status IS NULL OR q.status = 'running' THEN h.lease_expires END,
		wake_at = CASE WHEN q.status IS NULL THEN h.wake_at
			WHEN q.status = 'waiting' AND h.cancel_requested
				THEN least(coalesce(q.wake, ` + nowSQL + `), ` + nowSQL + `)
			WHEN q.status = 'waiting' THEN q.wake END,
		updated_at = ` + nowSQL + `
	FROM q, l
	WHERE h.seq = l.seq AND h.id = q.id AND h.lease_token = q.token AND h.position = q.after AND h.lease_owner <> ''
		AND h.status IN ('queued', 'running', 'waiting')
	RETURNING h.seq, h.id, h.position, h.status, h.lease_owner, h.cancel_requested, h.updated_at, q.after
), j AS (
	INSERT INTO hitch_journal (run_seq, pos, kind, at, data)
	SELECT r.seq, r.after + e.ord, e.kind, r.updated_at, e.data::json
	FROM r JOIN unnest($8::text[], $9::int[], $10::text[], $11::text[]) AS e (id, ord, kind, data) ON e.id = r.id
)
SELECT id, position, status, lease_owner, cancel_requested FROM r`

// groupReq is one append waiting to be grouped.
type groupReq struct {
	ctx  context.Context
	p    store.JournalAppendParams
	done chan groupAns // buffered; receives exactly one answer
}

type groupAns struct {
	out store.Appended
	err error
}

// appendGrouped queues p for the grouping goroutine and waits for its
// answer, which comes after the commit.
func (s *Store) appendGrouped(ctx context.Context, p store.JournalAppendParams) (store.Appended, error) {
	if s.closed.Load() {
		return store.Appended{}, ErrClosed
	}
	r := &groupReq{ctx: ctx, p: p, done: make(chan groupAns, 1)}
	select {
	case s.group <- r:
	case <-ctx.Done():
		return store.Appended{}, ctx.Err()
	case <-s.stop:
		return store.Appended{}, ErrClosed
	}
	select {
	case a := <-r.done:
		return a.out, a.err
	case <-s.grouped:
		// The goroutine answered everything it took before it returned;
		// what it did not take is not written.
		select {
		case a := <-r.done:
			return a.out, a.err
		default:
			return store.Appended{}, ErrClosed
		}
	}
}

// groupLoop is the grouping goroutine: it takes what is queued and commits
// it in one statement. It never waits for more to arrive: a lone append
// goes at once.
func (s *Store) groupLoop() {
	defer close(s.grouped)
	var batch, next []*groupReq
	for {
		if len(next) == 0 {
			select {
			case <-s.stop:
				return
			case r := <-s.group:
				next = append(next, r)
			}
		}
		batch, next = next, batch[:0]
		runs := make(map[string]bool, len(batch))
		for _, r := range batch {
			runs[r.p.RunID] = true
		}
	fill:
		for len(batch) < MaxGroupAppends {
			select {
			case r := <-s.group:
				if runs[r.p.RunID] {
					next = append(next, r) // one append per run in a statement
					continue
				}
				runs[r.p.RunID] = true
				batch = append(batch, r)
			default:
				break fill
			}
		}
		s.appendGroup(batch)
		clear(batch)
	}
}

// appendGroup commits a group and answers each of its appends.
func (s *Store) appendGroup(batch []*groupReq) {
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- groupAns{err: err}
			continue
		}
		live = append(live, r)
	}
	// A caller's cancellation must not break a statement shared with others.
	ctx := context.Background()
	switch len(live) {
	case 0:
		return
	case 1:
		out, err := s.appendOne(ctx, live[0].p)
		live[0].done <- groupAns{out, err}
		return
	}
	got := make(map[string]store.Appended, len(live))
	err := s.retry(ctx, func() error {
		clear(got)
		rows, err := s.pool.Query(ctx, groupSQL, s.groupArgs(live)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, status string
			var a store.Appended
			if err := rows.Scan(&id, &a.Position, &status, &a.LeaseOwner, &a.CancelRequested); err != nil {
				return err
			}
			a.Status = hitchtype.Status(status)
			got[id] = a
		}
		return rows.Err()
	})
	if err != nil {
		// Nothing of the group was written: try each on its own, so that
		// one bad append does not fail the others.
		for _, r := range live {
			out, err := s.appendOne(ctx, r.p)
			r.done <- groupAns{out, err}
		}
		return
	}
	for _, r := range live {
		if a, ok := got[r.p.RunID]; ok {
			r.done <- groupAns{out: a}
			continue
		}
		r.done <- groupAns{err: s.refusal(ctx, s.pool, r.p)}
	}
}

// appendOne is one append that charges nothing in one statement.
func (s *Store) appendOne(ctx context.Context, p store.JournalAppendParams) (store.Appended, error) {
	var out store.Appended
	err := s.retry(ctx, func() error {
		a, err := scanAppended(s.pool.QueryRow(ctx, appendQuery(p), s.appendArgs(p)...))
		if errors.Is(err, pgx.ErrNoRows) {
			return s.refusal(ctx, s.pool, p)
		}
		out = a.out
		return err
	})
	return out, err
}

// groupArgs are groupSQL's arguments for a group.
func (s *Store) groupArgs(g []*groupReq) []any {
	n := 0
	for _, r := range g {
		n += len(r.p.Entries)
	}
	var (
		ids      = make([]string, len(g))
		tokens   = make([]int64, len(g))
		afters   = make([]int64, len(g))
		counts   = make([]int32, len(g))
		statuses = make([]*string, len(g))
		wakes    = make([]*time.Time, len(g))
		eids     = make([]string, 0, n)
		eords    = make([]int32, 0, n)
		kinds    = make([]string, 0, n)
		data     = make([]string, 0, n)
	)
	for i, r := range g {
		p := r.p
		ids[i], tokens[i], afters[i], counts[i] = p.RunID, p.Token, p.After, int32(len(p.Entries))
		if p.Status != "" {
			st := string(p.Status)
			statuses[i] = &st
		}
		wakes[i] = nullTime(p.WakeAt)
		for j, e := range p.Entries {
			eids = append(eids, p.RunID)
			eords = append(eords, int32(j+1))
			kinds = append(kinds, e.Kind)
			data = append(data, string(e.Data))
		}
	}
	return []any{s.clockArg(), ids, tokens, afters, counts, statuses, wakes, eids, eords, kinds, data}
}
