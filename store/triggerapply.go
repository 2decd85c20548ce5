package store

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// TriggerCreateTx is one driver transaction of a TriggerCreate: the
// statements of the driver's dialect. ApplyTriggerCreate decides over it.
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

// ApplyTriggerCreate makes a TriggerCreate in tx, once CheckTriggerCreate
// has passed p: the existing binding is returned as it stands, or
// replaced when p.Replace is set and its spec differs; a new one is
// refused with *TriggerLimitError when its session has p.MaxPerSession
// bindings that are not done.
func ApplyTriggerCreate(tx TriggerCreateTx, p TriggerCreateParams) (Trigger, bool, error) {
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

// SortDue orders claimed bindings as TriggerClaim answers them: the
// earliest NextFire first, then by id.
func SortDue(ts []Trigger) {
	slices.SortFunc(ts, func(a, b Trigger) int {
		return cmp.Or(a.NextFire.Compare(b.NextFire), cmp.Compare(a.ID, b.ID))
	})
}
