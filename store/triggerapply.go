package store

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// TriggerCreateTx is one driver transaction of a TriggerCreate: the
// statements of the driver's dialect. InTriggerCreate decides over it.
type TriggerCreateTx interface {
	// Get reads a binding, locked for the rest of the transaction where
	// the driver locks rows, or ErrTriggerNotFound.
	Get(id string) (Trigger, error)
	// Replace replaces a binding's definition, NextFire and state, and
	// fences off a claim in flight; counts are kept.
	Replace(p TriggerCreateParams, state string) (Trigger, error)
	// Live counts a session's bindings that are not done.
	Live(sessionID string) (int, error)
	// Insert creates the binding in state; created is false, with the
	// binding as stored, when another writer created it first.
	Insert(p TriggerCreateParams, state string) (t Trigger, created bool, err error)
}

// InTriggerCreate is a driver's way into a TriggerCreate: it runs fn in
// one write transaction, in which creates of p's session take turns when
// p.MaxPerSession is set, and commits when fn returns nil.
type InTriggerCreate func(ctx context.Context, p TriggerCreateParams, fn func(TriggerCreateTx) error) error

// Create makes a TriggerCreate (see TriggerStore).
func (in InTriggerCreate) Create(ctx context.Context, p TriggerCreateParams) (Trigger, bool, error) {
	if err := CheckTriggerCreate(p); err != nil {
		return Trigger{}, false, fmt.Errorf("trigger create %q: %w", p.ID, err)
	}
	var (
		out     Trigger
		created bool
	)
	err := in(ctx, p, func(tx TriggerCreateTx) (err error) {
		out, created, err = applyTriggerCreate(tx, p)
		return err
	})
	if err != nil {
		return Trigger{}, false, fmt.Errorf("trigger create %q: %w", p.ID, err)
	}
	return out, created, nil
}

// applyTriggerCreate makes a TriggerCreate in tx, once CheckTriggerCreate
// has passed p: the existing binding is returned as it stands, or
// replaced when p.Replace is set and its spec differs; a new one is
// refused with *TriggerLimitError when its session has p.MaxPerSession
// bindings that are not done.
func applyTriggerCreate(tx TriggerCreateTx, p TriggerCreateParams) (Trigger, bool, error) {
	state := TriggerActive
	if p.Paused {
		state = TriggerPaused
	}
	old, err := tx.Get(p.ID)
	switch {
	case err == nil && (!p.Replace || bytes.Equal(old.Spec, p.Spec)):
		return old, false, nil
	case err == nil:
		t, err := tx.Replace(p, state)
		return t, false, err
	case !errors.Is(err, ErrTriggerNotFound):
		return Trigger{}, false, err
	}
	if p.MaxPerSession > 0 && p.SessionID != "" {
		n, err := tx.Live(p.SessionID)
		if err != nil {
			return Trigger{}, false, err
		}
		if n >= p.MaxPerSession {
			return Trigger{}, false, &TriggerLimitError{SessionID: p.SessionID, Limit: p.MaxPerSession}
		}
	}
	return tx.Insert(p, state)
}

// CheckTriggerList checks a TriggerList's parameters and returns its
// limit: 0 means 100.
func CheckTriggerList(p TriggerListParams) (int, error) {
	switch {
	case p.Limit < 0 || p.Limit > MaxTriggerPage:
		return 0, fmt.Errorf("limit %d is outside 0..%d", p.Limit, MaxTriggerPage)
	case p.Limit == 0:
		return 100, nil
	}
	return p.Limit, nil
}

// TriggerFilters are a TriggerList's filters as column and value, those
// set only.
func TriggerFilters(p TriggerListParams) (cols, vals []string) {
	for _, f := range []struct{ col, v string }{{"session_id", p.SessionID}, {"state", p.State}, {"tenant", p.Tenant}} {
		if f.v != "" {
			cols, vals = append(cols, f.col), append(vals, f.v)
		}
	}
	return cols, vals
}

// ClaimDue is a driver's TriggerClaim statement: in one transaction it
// reads the store clock once and claims up to p.Limit (at least 1)
// bindings due by that reading, in any order, returning them with the
// reading.
type ClaimDue func(ctx context.Context, p TriggerClaimParams) ([]Trigger, time.Time, error)

// Claim makes a TriggerClaim (see TriggerStore).
func (claim ClaimDue) Claim(ctx context.Context, p TriggerClaimParams) ([]Trigger, time.Time, error) {
	if err := CheckTriggerClaim(p); err != nil {
		return nil, time.Time{}, fmt.Errorf("trigger claim: %w", err)
	}
	p.Limit = max(p.Limit, 1)
	out, now, err := claim(ctx, p)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("trigger claim: %w", err)
	}
	sortDue(out)
	return out, now.UTC(), nil
}

// PauseTrigger stops a binding's occurrences from being claimed; they
// stay due, and the binding's missed policy judges them on resume.
// ResumeTrigger undoes it. Both are idempotent and return the binding as it
// stands; a done binding is returned unchanged. ErrTriggerNotFound when it
// does not exist.
func PauseTrigger(ctx context.Context, ts TriggerStore, id string) (Trigger, error) {
	t, err := ts.TriggerSetState(ctx, id, TriggerActive, TriggerPaused)
	return Result(t, err, "trigger pause", id)
}

// ResumeTrigger resumes a paused binding (see PauseTrigger).
func ResumeTrigger(ctx context.Context, ts TriggerStore, id string) (Trigger, error) {
	t, err := ts.TriggerSetState(ctx, id, TriggerPaused, TriggerActive)
	return Result(t, err, "trigger resume", id)
}

// sortDue orders claimed bindings as TriggerClaim answers them: the
// earliest NextFire first, then by id.
func sortDue(ts []Trigger) {
	slices.SortFunc(ts, func(a, b Trigger) int {
		return cmp.Or(a.NextFire.Compare(b.NextFire), cmp.Compare(a.ID, b.ID))
	})
}
