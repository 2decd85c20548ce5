package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
)

// The lease decisions every driver makes alike, on the run as it stands.

// LeaseOf is the lease a claim of run r gives.
func LeaseOf(r Run) Lease {
	return Lease{Run: r, Token: r.LeaseToken, ExpiresAt: r.LeaseExpires}
}

// CheckRenew checks a LeaseRenew's parameters.
func CheckRenew(p LeaseRenewParams) error {
	return errors.Join(CheckName("run id", p.RunID, true), CheckName("owner", p.Owner, true), CheckLease(p.TTL, 0))
}

// CheckRelease checks a LeaseRelease's parameters.
func CheckRelease(p LeaseReleaseParams) error {
	return errors.Join(CheckName("run id", p.RunID, true), CheckName("owner", p.Owner, true))
}

// LeaseRefused says why the lease token held by owner is not cur's lease
// — cur ended (ErrEnded) or its lease is another's (ErrFenced) — or nil
// when it is.
func LeaseRefused(cur Run, token int64, owner string) error {
	switch {
	case cur.Status.Terminal():
		return fmt.Errorf("%w (status %s)", ErrEnded, cur.Status)
	case cur.LeaseToken != token || cur.LeaseOwner != owner:
		return fmt.Errorf("%w (token %d owned by %q, current token %d owned by %q)",
			ErrFenced, token, owner, cur.LeaseToken, cur.LeaseOwner)
	}
	return nil
}

// ReleaseRefused is LeaseRefused for a LeaseRelease, which is idempotent:
// released reports that p's lease was released already, and there is
// nothing to do.
func ReleaseRefused(cur Run, p LeaseReleaseParams) (released bool, err error) {
	if !cur.Status.Terminal() && cur.LeaseToken == p.Token && cur.LeaseOwner == "" {
		return true, nil
	}
	return false, LeaseRefused(cur, p.Token, p.Owner)
}

// ClaimRefused says why a claim by ID did not claim cur: it ended
// (ErrEnded), or live says its lease is held and not expired
// (*LeaseHeldError). Nil means cur was claimable after all: it changed
// under the claim.
func ClaimRefused(cur Run, live bool) error {
	switch {
	case cur.Status.Terminal():
		return fmt.Errorf("%w (status %s)", ErrEnded, cur.Status)
	case cur.LeaseOwner != "" && live:
		return &LeaseHeldError{RunID: cur.ID, Owner: cur.LeaseOwner, ExpiresAt: cur.LeaseExpires}
	}
	return nil
}

// Claimed are the leases of the runs a claim of due runs took, read from
// rows by scan (which gives each run's store key too), in key order.
func Claimed(rows Rows, scan func() (key int64, r Run, err error)) ([]Lease, error) {
	type keyed struct {
		key int64
		run Run
	}
	runs, err := Collect(rows, func() (keyed, error) {
		k, r, err := scan()
		return keyed{k, r}, err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(runs, func(a, b keyed) int { return cmp.Compare(a.key, b.key) })
	var leases []Lease
	for _, k := range runs {
		leases = append(leases, LeaseOf(k.run))
	}
	return leases, nil
}

// Renewed reads the rows of a LeaseRenewMany's statement: each a renewed
// run's id and whether a cancel of it is requested.
func Renewed(rows ScanRows) (map[string]bool, error) {
	renewed := make(map[string]bool)
	for rows.Next() {
		var (
			id     string
			cancel bool
		)
		if err := rows.Scan(&id, &cancel); err != nil {
			return nil, err
		}
		renewed[id] = cancel
	}
	return renewed, rows.Err()
}

// RenewHeld is a driver's LeaseRenewMany statement, once p is checked: it
// renews by p.TTL those of p.Leases that p.Owner holds and answers what
// Renewed reads of its rows.
type RenewHeld func(ctx context.Context, p LeaseRenewManyParams) (renewed map[string]bool, err error)

// RenewMany makes a LeaseRenewMany (see Store).
func (renew RenewHeld) RenewMany(ctx context.Context, p LeaseRenewManyParams) ([]LeaseRenewal, error) {
	if err := errors.Join(CheckRenewMany(p), CheckLease(p.TTL, 0)); err != nil {
		return nil, fmt.Errorf("lease renew many: %w", err)
	}
	renewed, err := renew(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("lease renew many: %w", err)
	}
	return Renewals(p.Leases, renewed), nil
}

// Renewals is what LeaseRenewMany did with each of leases, given the runs
// its statement renewed (Renewed).
func Renewals(leases []LeaseHeld, renewed map[string]bool) []LeaseRenewal {
	out := make([]LeaseRenewal, len(leases))
	for i, l := range leases {
		cancel, ok := renewed[l.RunID]
		out[i] = LeaseRenewal{RunID: l.RunID, Renewed: ok, CancelRequested: cancel}
	}
	return out
}
