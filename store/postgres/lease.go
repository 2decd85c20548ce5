package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch/store"
)

// leaseSet is the SET list of a claim: $2 owner, $3 TTL in microseconds.
const leaseSet = `status = 'running', wake_at = NULL, lease_owner = $2, lease_token = lease_token + 1,
	lease_expires = ` + nowSQL + ` + $3 * interval '1 microsecond', updated_at = ` + nowSQL

// claimDueSQL claims up to $4 due runs, longest due first. Each half of
// "due" walks its own partial index and locks at most $4 rows; FOR UPDATE
// SKIP LOCKED makes concurrent claimers pass over each other's rows
// instead of waiting for them, and re-checks each row it locks against the
// committed version, so no run is claimed twice. The rows a half locked
// beyond the $4 kept are let go at the statement's commit.
const claimDueSQL = `
WITH leased AS (
	SELECT seq, lease_expires AS due FROM hitch_runs
	WHERE status IN ('queued', 'running') AND (lease_expires IS NULL OR lease_expires <= ` + nowSQL + `)
	ORDER BY lease_expires NULLS FIRST, seq
	LIMIT $4
	FOR UPDATE SKIP LOCKED
), woken AS (
	SELECT seq, wake_at AS due FROM hitch_runs
	WHERE status = 'waiting' AND wake_at <= ` + nowSQL + `
	ORDER BY wake_at, seq
	LIMIT $4
	FOR UPDATE SKIP LOCKED
), due AS (
	SELECT seq FROM (SELECT seq, due FROM leased UNION ALL SELECT seq, due FROM woken) AS d
	ORDER BY due NULLS FIRST, seq
	LIMIT $4
)
UPDATE hitch_runs AS r SET ` + leaseSet + `
FROM due WHERE r.seq = due.seq
RETURNING r.seq, r.id, r.root_id, r.parent_id, r.depth, r.agent, r.version, r.input_hash, r.status, r.position,
	r.lease_owner, r.lease_token, r.lease_expires, r.wake_at, r.cancel_requested, r.outcome, r.created_at, r.updated_at, r.tenant, r.title,
	r.cancel_by, r.cancel_reason, r.forked_from`

// claimOneSQL claims one run by id when it is not terminal and holds no
// live lease.
const claimOneSQL = `
UPDATE hitch_runs SET ` + leaseSet + `
WHERE id = $4 AND status IN ('queued', 'running', 'waiting')
	AND (lease_owner = '' OR lease_expires IS NULL OR lease_expires <= ` + nowSQL + `)
RETURNING ` + runCols

// LeaseClaim leases due runs, or one run by ID, to p.Owner for p.TTL. Due
// runs are claimed longest due first.
func (s *Store) LeaseClaim(ctx context.Context, p store.LeaseClaimParams) ([]store.Lease, error) {
	if err := store.CheckClaim(p); err != nil {
		return nil, fmt.Errorf("lease claim: %w", err)
	}
	if p.RunID != "" {
		l, err := s.claimOne(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("lease claim %q: %w", p.RunID, err)
		}
		return []store.Lease{l}, nil
	}
	var leases []store.Lease
	err := s.retry(ctx, func() error {
		leases = leases[:0]
		rows, err := s.pool.Query(ctx, claimDueSQL, s.clockArg(), p.Owner, p.TTL.Microseconds(), max(p.Limit, 1))
		if err == nil {
			defer rows.Close()
			leases, err = store.Claimed(rows, func() (int64, store.Run, error) { r, err := scanRun(rows); return r.seq, r.run, err })
		}
		return err
	})
	return store.Result(leases, err, "lease claim", "")
}

// claimOne claims a run by id in one statement; when it matches nothing,
// the run is read to say why. A read that finds the run claimable after
// all (its lease ran out in between) tries again.
func (s *Store) claimOne(ctx context.Context, p store.LeaseClaimParams) (store.Lease, error) {
	var l store.Lease
	err := s.retry(ctx, func() error {
		for try := 0; ; try++ {
			now := s.clockArg()
			r, err := scanRun(s.pool.QueryRow(ctx, claimOneSQL, now, p.Owner, p.TTL.Microseconds(), p.RunID))
			if err == nil {
				l = store.LeaseOf(r.run)
				return nil
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			var live bool
			r, err = scanRun(s.pool.QueryRow(ctx, `SELECT `+runCols+`, coalesce(lease_expires > `+nowSQL+`, false) FROM hitch_runs WHERE id = $2`,
				now, p.RunID), &live)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				return store.ErrNotFound
			case err != nil:
				return err
			}
			if err := store.ClaimRefused(r.run, live); err != nil {
				return err
			}
			if try >= maxTries {
				return fmt.Errorf("%w (the run changed under %d claims)", store.ErrConflict, maxTries)
			}
		}
	})
	return l, err
}

// renewSQL extends a held lease from now; it matches nothing when the token
// or owner is not current or the run has ended.
const renewSQL = `
UPDATE hitch_runs SET lease_expires = ` + nowSQL + ` + $5 * interval '1 microsecond', updated_at = ` + nowSQL + `
WHERE id = $2 AND lease_owner = $3 AND lease_token = $4 AND status IN ('queued', 'running', 'waiting')
RETURNING ` + runCols

// LeaseRenew extends a held lease by p.TTL from now.
func (s *Store) LeaseRenew(ctx context.Context, p store.LeaseRenewParams) (store.Run, error) {
	if err := store.CheckRenew(p); err != nil {
		return store.Run{}, fmt.Errorf("lease renew %q: %w", p.RunID, err)
	}
	run, err := s.leaseUpdate(ctx, p.RunID, "renewal", func(r store.Run) (bool, error) {
		return false, store.LeaseRefused(r, p.Token, p.Owner)
	}, renewSQL, s.clockArg(), p.RunID, p.Owner, p.Token, p.TTL.Microseconds())
	return store.Result(run, err, "lease renew", p.RunID)
}

// leaseUpdate runs q, an update of run id's lease that returns the run and
// matches nothing when the lease is not the caller's. Then refused reads
// the run as it stands to say why: an error, or done when there was
// nothing to do; else the lease changed under the update (what).
func (s *Store) leaseUpdate(ctx context.Context, id, what string, refused func(store.Run) (done bool, err error), q string, args ...any) (store.Run, error) {
	var run store.Run
	err := s.retry(ctx, func() error {
		r, err := scanRun(s.pool.QueryRow(ctx, q, args...))
		if errors.Is(err, pgx.ErrNoRows) {
			if r, err = s.getRow(ctx, s.pool, id); err != nil {
				return err
			}
			done, err := refused(r.run)
			if err != nil || done {
				run = r.run
				return err
			}
			return fmt.Errorf("%w: the lease changed under the %s", store.ErrFenced, what)
		}
		run = r.run
		return err
	})
	return run, err
}

// renewManySQL renews the leases $3 (run ids) with tokens $4 held by $2,
// by $5 microseconds, in one statement; a lease that is not current
// matches nothing. It locks the runs in the order of their ids first, as
// groupSQL does, so that the two cannot deadlock.
const renewManySQL = `
WITH o AS MATERIALIZED (
	SELECT seq FROM hitch_runs WHERE id = ANY ($3::text[]) AND lease_owner = $2 ORDER BY id FOR NO KEY UPDATE
)
UPDATE hitch_runs AS r SET lease_expires = ` + nowSQL + ` + $5 * interval '1 microsecond', updated_at = ` + nowSQL + `
FROM unnest($3::text[], $4::bigint[]) AS l(id, token), o
WHERE r.seq = o.seq AND r.id = l.id AND r.lease_token = l.token AND r.lease_owner = $2 AND r.status IN ('queued', 'running', 'waiting')
RETURNING r.id, r.cancel_requested`

// LeaseRenewMany renews many leases of one owner in one statement.
func (s *Store) LeaseRenewMany(ctx context.Context, p store.LeaseRenewManyParams) ([]store.LeaseRenewal, error) {
	return store.RenewHeld(s.renewHeld).RenewMany(ctx, p)
}

func (s *Store) renewHeld(ctx context.Context, p store.LeaseRenewManyParams) (renewed map[string]bool, err error) {
	ids, tokens := make([]string, len(p.Leases)), make([]int64, len(p.Leases))
	for i, l := range p.Leases {
		ids[i], tokens[i] = l.RunID, l.Token
	}
	err = s.retry(ctx, func() error {
		rows, err := s.pool.Query(ctx, renewManySQL, s.clockArg(), p.Owner, ids, tokens, p.TTL.Microseconds())
		if err != nil {
			return err
		}
		defer rows.Close()
		renewed, err = store.Renewed(rows)
		return err
	})
	return renewed, err
}

// releaseSQL gives a held lease back: the lease is cleared, the status and
// the token stay.
const releaseSQL = `
UPDATE hitch_runs SET lease_owner = '', lease_expires = NULL, updated_at = ` + nowSQL + `
WHERE id = $2 AND lease_owner = $3 AND lease_token = $4 AND status IN ('queued', 'running', 'waiting')
RETURNING ` + runCols

// LeaseRelease gives a lease back before it expires, so that another node
// claims the run at once. Releasing an already released lease again (same
// token) returns the run and nil.
func (s *Store) LeaseRelease(ctx context.Context, p store.LeaseReleaseParams) (store.Run, error) {
	if err := store.CheckRelease(p); err != nil {
		return store.Run{}, fmt.Errorf("lease release %q: %w", p.RunID, err)
	}
	run, err := s.leaseUpdate(ctx, p.RunID, "release", func(r store.Run) (bool, error) { return store.ReleaseRefused(r, p) },
		releaseSQL, s.clockArg(), p.RunID, p.Owner, p.Token)
	return store.Result(run, err, "lease release", p.RunID)
}
