package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hitch-dev/hitch/store"
)

// BudgetCharge charges a family's budget atomically.
func (s *Store) BudgetCharge(ctx context.Context, p store.BudgetChargeParams) (store.Budget, error) {
	var used store.Budget
	err := s.write(ctx, func(tx *wtx) error {
		root, err := tx.getRow(p.RootID)
		if err != nil {
			return err
		}
		var limitsJSON, usedJSON string
		err = tx.budgetGet.QueryRow(root.seq).Scan(&limitsJSON, &usedJSON)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // no budget: every charge is accepted
		}
		if err != nil {
			return err
		}
		var limits store.Budget
		if err := errors.Join(json.Unmarshal([]byte(limitsJSON), &limits), json.Unmarshal([]byte(usedJSON), &used)); err != nil {
			return fmt.Errorf("decode budget: %w", err)
		}
		next := used.Add(p.Charge).Add(p.Adjust)
		if which := next.Exceeds(limits, p.Charge); which != "" {
			e := &store.BudgetExhaustedError{RootID: p.RootID, Which: which}
			switch which {
			case "tokens":
				e.Limit, e.Used = limits.Tokens, used.Tokens
			case "usd":
				e.Limit, e.Used = limits.MicroUSD, used.MicroUSD
			case "model_calls":
				e.Limit, e.Used = limits.ModelCalls, used.ModelCalls
			case "tool_calls":
				e.Limit, e.Used = limits.ToolCalls, used.ToolCalls
			}
			return e
		}
		b, _ := json.Marshal(next)
		if _, err := tx.budgetSet.Exec(string(b), root.seq); err != nil {
			return err
		}
		used = next
		return nil
	})
	if err != nil {
		return store.Budget{}, fmt.Errorf("budget charge %q: %w", p.RootID, err)
	}
	return used, nil
}

// BudgetGet returns a family's limits and use.
func (s *Store) BudgetGet(ctx context.Context, rootID string) (limits, used store.Budget, ok bool, err error) {
	if s.closed.Load() {
		return limits, used, false, ErrClosed
	}
	var limitsJSON, usedJSON string
	err = s.rdb.QueryRowContext(ctx, `SELECT b.limits, b.used FROM budgets b JOIN runs r ON r.seq = b.root_seq WHERE r.id = ?`, rootID).
		Scan(&limitsJSON, &usedJSON)
	if errors.Is(err, sql.ErrNoRows) {
		if _, gerr := s.RunGet(ctx, rootID); gerr != nil {
			return limits, used, false, fmt.Errorf("budget get %q: %w", rootID, store.ErrNotFound)
		}
		return limits, used, false, nil
	}
	if err != nil {
		return limits, used, false, fmt.Errorf("budget get %q: %w", rootID, err)
	}
	if err := errors.Join(json.Unmarshal([]byte(limitsJSON), &limits), json.Unmarshal([]byte(usedJSON), &used)); err != nil {
		return limits, used, false, fmt.Errorf("budget get %q: decode: %w", rootID, err)
	}
	return limits, used, true, nil
}
