package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hitch-dev/hitch/store"
)

// LeaseClaim leases due runs, or one run by ID, to p.Owner for p.TTL.
// Due runs are claimed longest due first. Claims run on the single writer, so two
// claims can never return the same run.
func (s *Store) LeaseClaim(ctx context.Context, p store.LeaseClaimParams) ([]store.Lease, error) {
	if err := store.CheckClaim(p); err != nil {
		return nil, fmt.Errorf("lease claim: %w", err)
	}
	limit := max(p.Limit, 1)
	var leases []store.Lease
	// A claim of due runs goes ahead of the queue, as renewals do: the
	// runners it starts queue their first writes at once, and a node that
	// reclaims thousands of runs after a crash would otherwise claim each
	// next batch only after the last one's writes.
	write := s.write
	if p.RunID == "" {
		write = s.writeUrgent
	}
	err := write(ctx, func(tx *wtx) error {
		leases = nil // a retried request starts over
		now := micros(tx.now)
		expires := micros(tx.now.Add(p.TTL))
		if p.RunID != "" {
			r, err := scanRun(tx.claimOne.QueryRow(p.Owner, expires, now, p.RunID))
			if errors.Is(err, sql.ErrNoRows) {
				return tx.unclaimable(p.RunID, now)
			}
			if err != nil {
				return err
			}
			leases = append(leases, store.LeaseOf(r.run))
			return nil
		}
		rows, err := tx.claimDue.Query(p.Owner, expires, now, limit)
		if err == nil {
			defer rows.Close()
			leases, err = store.Claimed(rows, func() (int64, store.Run, error) { r, err := scanRun(rows); return r.seq, r.run, err })
		}
		return err
	})
	if err != nil {
		if p.RunID != "" {
			return nil, fmt.Errorf("lease claim %q: %w", p.RunID, err)
		}
		return nil, fmt.Errorf("lease claim: %w", err)
	}
	return leases, nil
}

// unclaimable reads a run that a claim by ID did not claim, to say why.
func (tx *wtx) unclaimable(id string, now int64) error {
	r, err := tx.getRow(id)
	if err != nil {
		return err
	}
	if err := store.ClaimRefused(r.run, micros(r.run.LeaseExpires) > now); err != nil {
		return err
	}
	return fmt.Errorf("%w (status %s, the claim matched no row)", store.ErrConflict, r.run.Status)
}

// LeaseRenew extends a held lease by p.TTL from now.
func (s *Store) LeaseRenew(ctx context.Context, p store.LeaseRenewParams) (store.Run, error) {
	if err := store.CheckRenew(p); err != nil {
		return store.Run{}, fmt.Errorf("lease renew %q: %w", p.RunID, err)
	}
	var run store.Run
	err := s.write(ctx, func(tx *wtx) error {
		r, err := tx.getRow(p.RunID)
		if err != nil {
			return err
		}
		if err := store.LeaseRefused(r.run, p.Token, p.Owner); err != nil {
			return err
		}
		r, err = scanRun(tx.renew.QueryRow(micros(tx.now.Add(p.TTL)), micros(tx.now), r.seq))
		run = r.run
		return err
	})
	return store.Result(run, err, "lease renew", p.RunID)
}

// LeaseRenewMany renews many leases of one owner in one transaction.
func (s *Store) LeaseRenewMany(ctx context.Context, p store.LeaseRenewManyParams) ([]store.LeaseRenewal, error) {
	return store.RenewHeld(s.renewHeld).RenewMany(ctx, p)
}

func (s *Store) renewHeld(ctx context.Context, p store.LeaseRenewManyParams) (renewed map[string]bool, err error) {
	held := make([][2]any, len(p.Leases))
	for i, l := range p.Leases {
		held[i] = [2]any{l.RunID, l.Token}
	}
	list, err := json.Marshal(held)
	if err != nil {
		return nil, err
	}
	err = s.writeUrgent(ctx, func(tx *wtx) error {
		rows, err := tx.renewHeld.Query(micros(tx.now.Add(p.TTL)), micros(tx.now), p.Owner, list)
		if err != nil {
			return err
		}
		defer rows.Close()
		renewed, err = store.Renewed(rows)
		return err
	})
	return renewed, err
}

// LeaseRelease gives a held lease back; the run keeps its status.
func (s *Store) LeaseRelease(ctx context.Context, p store.LeaseReleaseParams) (store.Run, error) {
	if err := store.CheckRelease(p); err != nil {
		return store.Run{}, fmt.Errorf("lease release %q: %w", p.RunID, err)
	}
	var run store.Run
	err := s.write(ctx, func(tx *wtx) error {
		r, err := tx.getRow(p.RunID)
		if err != nil {
			return err
		}
		released, err := store.ReleaseRefused(r.run, p)
		if err != nil || released {
			run = r.run
			return err
		}
		r, err = scanRun(tx.releaseLease.QueryRow(micros(tx.now), r.seq))
		run = r.run
		tx.mayBeDue()
		return err
	})
	return store.Result(run, err, "lease release", p.RunID)
}
