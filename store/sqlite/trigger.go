package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hitch-dev/hitch/store"
)

var _ store.TriggerStore = (*Store)(nil)

const triggerColumns = `id, tenant, session_id, spec, state, fire_count, missed_count, last_fire, next_fire,
	claim_owner, claim_token, claim_until, failures, last_error, created_at, updated_at, skip_count, last_skip, skip_reason`

func scanTrigger(sc scanner) (store.Trigger, error) {
	var (
		t                               store.Trigger
		spec                            string
		last, next, until, created, upd int64
		skip                            int64
	)
	err := sc.Scan(&t.ID, &t.Tenant, &t.SessionID, &spec, &t.State, &t.FireCount, &t.MissedCount, &last, &next,
		&t.ClaimOwner, &t.ClaimToken, &until, &t.Failures, &t.LastError, &created, &upd, &t.SkipCount, &skip, &t.SkipReason)
	if err != nil {
		return store.Trigger{}, err
	}
	t.Spec = []byte(spec)
	t.LastFire, t.NextFire, t.ClaimUntil = fromMicros(last), fromMicros(next), fromMicros(until)
	t.LastSkip = fromMicros(skip)
	t.CreatedAt, t.UpdatedAt = fromMicros(created), fromMicros(upd)
	return t, nil
}

func (x sx) trigger(id string) (store.Trigger, error) {
	t, err := scanTrigger(x.row(`SELECT `+triggerColumns+` FROM triggers WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return t, store.ErrTriggerNotFound
	}
	return t, err
}

// triggerTx is the store.TriggerCreateTx of one write transaction.
type triggerTx struct{ sx }

func (x triggerTx) Get(id string) (store.Trigger, error) { return x.trigger(id) }

func (x triggerTx) Replace(p store.TriggerCreateParams, state string) (store.Trigger, error) {
	return scanTrigger(x.row(`UPDATE triggers SET spec = ?, state = ?, next_fire = ?, claim_owner = '',
		claim_token = claim_token + 1, claim_until = 0, failures = 0, last_error = '', updated_at = ?
		WHERE id = ? RETURNING `+triggerColumns, string(p.Spec), state, micros(p.NextFire), x.now, p.ID))
}

func (x triggerTx) Live(sessionID string) (int, error) {
	var n int
	err := x.row(`SELECT count(*) FROM triggers WHERE session_id = ? AND state <> 'done'`, sessionID).Scan(&n)
	return n, err
}

func (x triggerTx) Insert(p store.TriggerCreateParams, state string) (store.Trigger, bool, error) {
	t, err := scanTrigger(x.row(`INSERT INTO triggers (id, tenant, session_id, spec, state, next_fire, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+triggerColumns,
		p.ID, store.TenantOr(p.Tenant), p.SessionID, string(p.Spec), state, micros(p.NextFire), x.now, x.now))
	return t, err == nil, err
}

// TriggerCreate creates a binding, or returns (or replaces) the existing one.
func (s *Store) TriggerCreate(ctx context.Context, p store.TriggerCreateParams) (store.Trigger, bool, error) {
	return store.InTriggerCreate(s.inTriggerCreate).Create(ctx, p)
}

// inTriggerCreate runs fn on the single writer, where creates take turns.
func (s *Store) inTriggerCreate(ctx context.Context, _ store.TriggerCreateParams, fn func(store.TriggerCreateTx) error) error {
	return s.write(ctx, func(tx *wtx) error { return fn(triggerTx{s.sx(tx)}) })
}

// TriggerGet returns one binding.
func (s *Store) TriggerGet(ctx context.Context, id string) (store.Trigger, error) {
	if s.closed.Load() {
		return store.Trigger{}, ErrClosed
	}
	t, err := scanTrigger(s.rdb.QueryRowContext(ctx, `SELECT `+triggerColumns+` FROM triggers WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrTriggerNotFound
	}
	return store.Result(t, err, "trigger get", id)
}

// TriggerList returns bindings by id after a cursor.
func (s *Store) TriggerList(ctx context.Context, p store.TriggerListParams) ([]store.Trigger, error) {
	limit, err := store.CheckTriggerList(p)
	if err := s.ready(err, "trigger list", ""); err != nil {
		return nil, err
	}
	where, args := []string{"id > ?"}, []any{p.After}
	cols, vals := store.TriggerFilters(p)
	for i, col := range cols {
		where, args = append(where, col+" = ?"), append(args, vals[i])
	}
	out, err := readAll(ctx, s, scanTrigger, `SELECT `+triggerColumns+` FROM triggers WHERE `+strings.Join(where, " AND ")+
		` ORDER BY id LIMIT ?`, append(args, limit)...)
	return store.Result(out, err, "trigger list", "")
}

// TriggerSetState moves a binding from one state to another.
func (s *Store) TriggerSetState(ctx context.Context, id, from, to string) (out store.Trigger, err error) {
	err = s.write(ctx, func(tx *wtx) error {
		x := s.sx(tx)
		if _, err := x.exec(`UPDATE triggers SET state = ?, updated_at = ? WHERE id = ? AND state = ?`, to, x.now, id, from); err != nil {
			return err
		}
		out, err = x.trigger(id)
		return err
	})
	return out, err
}

// TriggerRemove deletes a binding.
func (s *Store) TriggerRemove(ctx context.Context, id string) (bool, error) {
	removed := false
	err := s.write(ctx, func(tx *wtx) error {
		res, err := s.sx(tx).exec(`DELETE FROM triggers WHERE id = ?`, id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		removed = n > 0
		return err
	})
	return store.Result(removed, err, "trigger remove", id)
}

// TriggerClaim claims due bindings, the earliest first. Claims run on the
// single writer, so two claims never return the same binding.
func (s *Store) TriggerClaim(ctx context.Context, p store.TriggerClaimParams) ([]store.Trigger, time.Time, error) {
	return store.ClaimDue(s.claimDue).Claim(ctx, p)
}

func (s *Store) claimDue(ctx context.Context, p store.TriggerClaimParams) (out []store.Trigger, now time.Time, err error) {
	err = s.write(ctx, func(tx *wtx) error {
		x := s.sx(tx)
		out, now = nil, tx.now
		rows, err := x.c.QueryContext(context.Background(), `UPDATE triggers SET claim_owner = ?1, claim_token = claim_token + 1,
			claim_until = ?2, updated_at = ?3
			WHERE seq IN (SELECT seq FROM triggers WHERE state = 'active' AND next_fire <= ?3 AND claim_until <= ?3
				ORDER BY next_fire, seq LIMIT ?4)
			RETURNING `+triggerColumns, p.Owner, micros(tx.now.Add(p.TTL)), x.now, p.Limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = store.Collect(rows, func() (store.Trigger, error) { return scanTrigger(rows) })
		return err
	})
	return out, now, err
}

// fenced explains why a fenced update of binding id matched no row.
func (x sx) fenced(id string) error {
	if _, err := x.trigger(id); err != nil {
		return err
	}
	return store.ErrTriggerFenced
}

// TriggerRetire settles a claimed occurrence.
func (s *Store) TriggerRetire(ctx context.Context, p store.TriggerRetireParams) (store.Trigger, error) {
	fired, skipped := 0, 0
	if p.Fired {
		fired = 1
	}
	if p.Skipped {
		skipped = 1
	}
	var out store.Trigger
	err := s.write(ctx, func(tx *wtx) error {
		x := s.sx(tx)
		var err error
		out, err = scanTrigger(x.row(`UPDATE triggers SET fire_count = fire_count + ?1, missed_count = missed_count + ?2,
			last_fire = CASE WHEN ?1 = 1 THEN ?3 ELSE last_fire END, next_fire = ?4,
			state = CASE WHEN ?4 = 0 THEN 'done' ELSE state END,
			skip_count = skip_count + ?9, last_skip = CASE WHEN ?9 = 1 THEN ?3 ELSE last_skip END,
			skip_reason = CASE WHEN ?9 = 1 THEN ?10 ELSE skip_reason END,
			claim_owner = '', claim_until = 0, failures = 0, last_error = '', updated_at = ?5
			WHERE id = ?6 AND claim_token = ?7 AND claim_owner = ?8 AND next_fire = ?3
			RETURNING `+triggerColumns, fired, p.Missed, micros(p.Occurrence), micros(p.Next), x.now, p.ID, p.Token, p.Owner,
			skipped, store.TriggerErrorText(p.SkipReason)))
		if errors.Is(err, sql.ErrNoRows) {
			return x.fenced(p.ID)
		}
		return err
	})
	return store.Result(out, err, "trigger retire", p.ID)
}

// TriggerRelease gives back a claim whose dispatch failed.
func (s *Store) TriggerRelease(ctx context.Context, p store.TriggerReleaseParams) (store.Trigger, error) {
	msg := store.TriggerErrorText(p.Error)
	var out store.Trigger
	err := s.write(ctx, func(tx *wtx) error {
		x := s.sx(tx)
		var err error
		out, err = scanTrigger(x.row(`UPDATE triggers SET claim_owner = '', claim_until = ?1, failures = failures + 1,
			last_error = ?2, updated_at = ?3
			WHERE id = ?4 AND claim_token = ?5 AND claim_owner = ?6 AND next_fire = ?7
			RETURNING `+triggerColumns, micros(p.RetryAt), msg, x.now, p.ID, p.Token, p.Owner, micros(p.Occurrence)))
		if errors.Is(err, sql.ErrNoRows) {
			return x.fenced(p.ID)
		}
		return err
	})
	return store.Result(out, err, "trigger release", p.ID)
}

// TriggerNextDue returns when the next active binding becomes claimable.
func (s *Store) TriggerNextDue(ctx context.Context) (time.Time, bool, error) {
	if s.closed.Load() {
		return time.Time{}, false, ErrClosed
	}
	var at sql.NullInt64
	err := s.rdb.QueryRowContext(ctx, `SELECT min(max(next_fire, claim_until)) FROM triggers WHERE state = 'active'`).Scan(&at)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("trigger next due: %w", err)
	}
	if !at.Valid {
		return time.Time{}, false, nil
	}
	return fromMicros(at.Int64), true, nil
}
