package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hitch-dev/hitch/store"
)

// BudgetCharge charges a family's budget atomically. It is not fenced;
// engines charge through JournalAppend.
func (s *Store) BudgetCharge(ctx context.Context, p store.BudgetChargeParams) (store.Budget, error) {
	if err := store.CheckName("root id", p.RootID, true); err != nil {
		return store.Budget{}, fmt.Errorf("budget charge: %w", err)
	}
	var used store.Budget
	err := s.write(ctx, func(tx *wtx) error {
		root, err := tx.getRow(p.RootID)
		if err != nil {
			return err
		}
		used, err = tx.charge(root.seq, p)
		return err
	})
	if err != nil {
		return store.Budget{}, fmt.Errorf("budget charge %q: %w", p.RootID, err)
	}
	return used, nil
}

// charge applies c to the budget of the root run rootSeq and returns the use
// after it. A root without a budget accepts every charge and returns a zero
// use. It decodes into fresh values on every call: a batch that is retried
// runs it again, and must see only what is in the file.
func (tx *wtx) charge(rootSeq int64, c store.BudgetCharge) (store.Budget, error) {
	var limitsJSON, usedJSON string
	err := tx.budgetGet.QueryRow(rootSeq).Scan(&limitsJSON, &usedJSON)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Budget{}, nil // no budget: every charge is accepted
	}
	if err != nil {
		return store.Budget{}, err
	}
	var limits, used store.Budget
	if err := errors.Join(json.Unmarshal([]byte(limitsJSON), &limits), json.Unmarshal([]byte(usedJSON), &used)); err != nil {
		return store.Budget{}, fmt.Errorf("decode budget: %w", err)
	}
	next, err := store.Charged(c.RootID, limits, used, c)
	if err != nil {
		return store.Budget{}, err
	}
	b, err := json.Marshal(next)
	if err != nil {
		return store.Budget{}, fmt.Errorf("encode budget: %w", err)
	}
	if _, err := tx.budgetSet.Exec(string(b), rootSeq); err != nil {
		return store.Budget{}, err
	}
	return next, nil
}

// BudgetGet returns a family's limits and use.
func (s *Store) BudgetGet(ctx context.Context, rootID string) (limits, used store.Budget, ok bool, err error) {
	if s.closed.Load() {
		return limits, used, false, ErrClosed
	}
	var limitsJSON, usedJSON sql.NullString
	err = s.queryRow(ctx, s.reads.budget, budgetSQL, rootID).Scan(&limitsJSON, &usedJSON)
	if errors.Is(err, sql.ErrNoRows) {
		return limits, used, false, fmt.Errorf("budget get %q: %w", rootID, store.ErrNotFound)
	}
	if err != nil {
		return limits, used, false, fmt.Errorf("budget get %q: %w", rootID, err)
	}
	if !limitsJSON.Valid {
		return limits, used, false, nil
	}
	if err := errors.Join(json.Unmarshal([]byte(limitsJSON.String), &limits), json.Unmarshal([]byte(usedJSON.String), &used)); err != nil {
		return limits, used, false, fmt.Errorf("budget get %q: decode: %w", rootID, err)
	}
	return limits, used, true, nil
}
