package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch/store"
)

var _ store.TriggerStore = (*Store)(nil)

const triggerCols = `id, tenant, session_id, spec::text, state, fire_count, missed_count, last_fire, next_fire,
	claim_owner, claim_token, claim_until, failures, last_error, created_at, updated_at, skip_count, last_skip, skip_reason`

func scanTrigger(sc pgx.Row) (store.Trigger, error) {
	var (
		t                 store.Trigger
		spec              string
		last, next, until *time.Time
		skip              *time.Time
	)
	err := sc.Scan(&t.ID, &t.Tenant, &t.SessionID, &spec, &t.State, &t.FireCount, &t.MissedCount, &last, &next,
		&t.ClaimOwner, &t.ClaimToken, &until, &t.Failures, &t.LastError, &t.CreatedAt, &t.UpdatedAt, &t.SkipCount, &skip, &t.SkipReason)
	if err != nil {
		return store.Trigger{}, err
	}
	t.Spec = []byte(spec)
	t.LastFire, t.NextFire, t.ClaimUntil = utc(last), utc(next), utc(until)
	t.LastSkip = utc(skip)
	t.CreatedAt, t.UpdatedAt = t.CreatedAt.UTC(), t.UpdatedAt.UTC()
	return t, nil
}

// triggerTx is the store.TriggerCreateTx of one transaction.
type triggerTx struct {
	ctx context.Context
	tx  pgx.Tx
	s   *Store
}

func (x triggerTx) Get(id string) (store.Trigger, error) {
	t, err := scanTrigger(x.tx.QueryRow(x.ctx, `SELECT `+triggerCols+` FROM hitch_triggers WHERE id = $1 FOR UPDATE`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return t, store.ErrTriggerNotFound
	}
	return t, err
}

func (x triggerTx) Replace(p store.TriggerCreateParams, state string) (store.Trigger, error) {
	return scanTrigger(x.tx.QueryRow(x.ctx, `UPDATE hitch_triggers SET spec = $2::json, state = $3, next_fire = $4,
		claim_owner = '', claim_token = claim_token + 1, claim_until = NULL, failures = 0, last_error = '',
		updated_at = `+nowSQL+` WHERE id = $5 RETURNING `+triggerCols,
		x.s.clockArg(), string(p.Spec), state, nullTime(p.NextFire), p.ID))
}

func (x triggerTx) Live(sessionID string) (int, error) {
	var n int
	err := x.tx.QueryRow(x.ctx, `SELECT count(*) FROM hitch_triggers WHERE session_id = $1 AND state <> 'done'`, sessionID).Scan(&n)
	return n, err
}

func (x triggerTx) Insert(p store.TriggerCreateParams, state string) (store.Trigger, bool, error) {
	t, err := scanTrigger(x.tx.QueryRow(x.ctx, `INSERT INTO hitch_triggers (id, tenant, session_id, spec, state, next_fire,
			created_at, updated_at)
		VALUES ($2, $3, $4, $5::json, $6, $7, `+nowSQL+`, `+nowSQL+`)
		ON CONFLICT (id) DO NOTHING RETURNING `+triggerCols,
		x.s.clockArg(), p.ID, store.TenantOr(p.Tenant), p.SessionID, string(p.Spec), state, nullTime(p.NextFire)))
	if errors.Is(err, pgx.ErrNoRows) {
		// Created by another node since the read: return that one.
		t, err = scanTrigger(x.tx.QueryRow(x.ctx, `SELECT `+triggerCols+` FROM hitch_triggers WHERE id = $1`, p.ID))
		return t, false, err
	}
	return t, err == nil, err
}

// TriggerCreate creates a binding, or returns (or replaces) the existing one.
func (s *Store) TriggerCreate(ctx context.Context, p store.TriggerCreateParams) (store.Trigger, bool, error) {
	return store.InTriggerCreate(s.inTriggerCreate).Create(ctx, p)
}

func (s *Store) inTriggerCreate(ctx context.Context, p store.TriggerCreateParams, fn func(store.TriggerCreateTx) error) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if p.MaxPerSession > 0 && p.SessionID != "" {
			// Creates for one session take turns, so two cannot both pass
			// the count.
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('hitch_triggers:' || $1))`, p.SessionID); err != nil {
				return err
			}
		}
		return fn(triggerTx{ctx: ctx, tx: tx, s: s})
	})
}

// TriggerGet returns one binding.
func (s *Store) TriggerGet(ctx context.Context, id string) (store.Trigger, error) {
	if s.closed.Load() {
		return store.Trigger{}, ErrClosed
	}
	t, err := getTrigger(ctx, s.pool, id)
	return store.Result(t, err, "trigger get", id)
}

// getTrigger reads binding id on q, or ErrTriggerNotFound.
func getTrigger(ctx context.Context, q querier, id string) (store.Trigger, error) {
	t, err := scanTrigger(q.QueryRow(ctx, `SELECT `+triggerCols+` FROM hitch_triggers WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return t, store.ErrTriggerNotFound
	}
	return t, err
}

// TriggerList returns bindings by id after a cursor.
func (s *Store) TriggerList(ctx context.Context, p store.TriggerListParams) ([]store.Trigger, error) {
	limit, err := store.CheckTriggerList(p)
	if err := s.ready(err, "trigger list", ""); err != nil {
		return nil, err
	}
	where, args := []string{"id > $1"}, []any{p.After}
	cols, vals := store.TriggerFilters(p)
	for i, col := range cols {
		args = append(args, vals[i])
		where = append(where, col+" = $"+strconv.Itoa(len(args)))
	}
	args = append(args, limit)
	out, err := readAll(ctx, s.pool, scanTrigger, `SELECT `+triggerCols+` FROM hitch_triggers WHERE `+strings.Join(where, " AND ")+
		` ORDER BY id LIMIT $`+strconv.Itoa(len(args)), args...)
	return store.Result(out, err, "trigger list", "")
}

// TriggerSetState moves a binding from one state to another.
func (s *Store) TriggerSetState(ctx context.Context, id, from, to string) (out store.Trigger, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE hitch_triggers SET state = $2, updated_at = `+nowSQL+` WHERE id = $3 AND state = $4`,
			s.clockArg(), to, id, from); err != nil {
			return err
		}
		out, err = getTrigger(ctx, tx, id)
		return err
	})
	return out, err
}

// TriggerRemove deletes a binding.
func (s *Store) TriggerRemove(ctx context.Context, id string) (bool, error) {
	removed := false
	err := s.retry(ctx, func() error {
		tag, err := s.pool.Exec(ctx, `DELETE FROM hitch_triggers WHERE id = $1`, id)
		removed = err == nil && tag.RowsAffected() > 0
		return err
	})
	return store.Result(removed, err, "trigger remove", id)
}

// triggerClaimSQL claims up to $4 due bindings, the earliest first; FOR
// UPDATE SKIP LOCKED lets concurrent claimers pass over each other's rows
// and re-checks each locked row, so no binding is claimed twice.
const triggerClaimSQL = `
WITH due AS (
	SELECT seq FROM hitch_triggers
	WHERE state = 'active' AND next_fire <= ` + nowSQL + `
		AND (claim_until IS NULL OR claim_until <= ` + nowSQL + `)
	ORDER BY next_fire, seq
	LIMIT $4
	FOR UPDATE SKIP LOCKED
)
UPDATE hitch_triggers AS t SET claim_owner = $2, claim_token = t.claim_token + 1,
	claim_until = ` + nowSQL + ` + $3 * interval '1 microsecond', updated_at = ` + nowSQL + `
FROM due WHERE t.seq = due.seq
RETURNING t.id, t.tenant, t.session_id, t.spec::text, t.state, t.fire_count, t.missed_count, t.last_fire, t.next_fire,
	t.claim_owner, t.claim_token, t.claim_until, t.failures, t.last_error, t.created_at, t.updated_at, t.skip_count, t.last_skip, t.skip_reason`

// TriggerClaim claims due bindings, the earliest first.
func (s *Store) TriggerClaim(ctx context.Context, p store.TriggerClaimParams) ([]store.Trigger, time.Time, error) {
	return store.ClaimDue(s.claimDue).Claim(ctx, p)
}

func (s *Store) claimDue(ctx context.Context, p store.TriggerClaimParams) (out []store.Trigger, now time.Time, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		// The clock is read once and the claim judged by that reading,
		// which the caller gets back: an instant no later than the claim,
		// so nothing is claimed early, and caller and claim agree.
		if err := tx.QueryRow(ctx, `SELECT `+nowSQL, s.clockArg()).Scan(&now); err != nil {
			return err
		}
		out, err = readAll(ctx, tx, scanTrigger, triggerClaimSQL, now, p.Owner, p.TTL.Microseconds(), p.Limit)
		return err
	})
	return out, now, err
}

// fencedTrigger explains why a fenced update of binding id matched no row.
func (s *Store) fencedTrigger(ctx context.Context, id string) error {
	var one int
	err := s.pool.QueryRow(ctx, `SELECT 1 FROM hitch_triggers WHERE id = $1`, id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrTriggerNotFound
	}
	if err != nil {
		return err
	}
	return store.ErrTriggerFenced
}

// TriggerRetire settles a claimed occurrence.
func (s *Store) TriggerRetire(ctx context.Context, p store.TriggerRetireParams) (store.Trigger, error) {
	var out store.Trigger
	err := s.retry(ctx, func() error {
		var err error
		out, err = scanTrigger(s.pool.QueryRow(ctx, `UPDATE hitch_triggers SET
			fire_count = fire_count + CASE WHEN $2 THEN 1 ELSE 0 END, missed_count = missed_count + $3,
			last_fire = CASE WHEN $2 THEN $4::timestamptz ELSE last_fire END, next_fire = $5,
			state = CASE WHEN $5::timestamptz IS NULL THEN 'done' ELSE state END,
			skip_count = skip_count + CASE WHEN $9 THEN 1 ELSE 0 END,
			last_skip = CASE WHEN $9 THEN $4::timestamptz ELSE last_skip END,
			skip_reason = CASE WHEN $9 THEN $10 ELSE skip_reason END,
			claim_owner = '', claim_until = NULL, failures = 0, last_error = '', updated_at = `+nowSQL+`
			WHERE id = $6 AND claim_token = $7 AND claim_owner = $8 AND next_fire = $4::timestamptz
			RETURNING `+triggerCols,
			s.clockArg(), p.Fired, p.Missed, nullTime(p.Occurrence), nullTime(p.Next), p.ID, p.Token, p.Owner,
			p.Skipped, store.TriggerErrorText(p.SkipReason)))
		if errors.Is(err, pgx.ErrNoRows) {
			return s.fencedTrigger(ctx, p.ID)
		}
		return err
	})
	return store.Result(out, err, "trigger retire", p.ID)
}

// TriggerRelease gives back a claim whose dispatch failed.
func (s *Store) TriggerRelease(ctx context.Context, p store.TriggerReleaseParams) (store.Trigger, error) {
	msg := store.TriggerErrorText(p.Error)
	var out store.Trigger
	err := s.retry(ctx, func() error {
		var err error
		out, err = scanTrigger(s.pool.QueryRow(ctx, `UPDATE hitch_triggers SET claim_owner = '', claim_until = $2,
			failures = failures + 1, last_error = $3, updated_at = `+nowSQL+`
			WHERE id = $4 AND claim_token = $5 AND claim_owner = $6 AND next_fire = $7
			RETURNING `+triggerCols,
			s.clockArg(), nullTime(p.RetryAt), msg, p.ID, p.Token, p.Owner, nullTime(p.Occurrence)))
		if errors.Is(err, pgx.ErrNoRows) {
			return s.fencedTrigger(ctx, p.ID)
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
	var at *time.Time
	err := s.pool.QueryRow(ctx, `SELECT min(greatest(next_fire, claim_until)) FROM hitch_triggers WHERE state = 'active'`).Scan(&at)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("trigger next due: %w", err)
	}
	if at == nil {
		return time.Time{}, false, nil
	}
	return at.UTC(), true, nil
}
