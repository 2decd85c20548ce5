package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch/store"
)

const budgetCols = `b.limit_tokens, b.limit_micro_usd, b.limit_model_calls, b.limit_tool_calls, b.limit_wall_ms,
	b.used_tokens, b.used_micro_usd, b.used_model_calls, b.used_tool_calls`

func scanBudget(sc pgx.Row, extra ...any) (limits, used store.Budget, err error) {
	err = sc.Scan(append([]any{&limits.Tokens, &limits.MicroUSD, &limits.ModelCalls, &limits.ToolCalls, &limits.WallMS,
		&used.Tokens, &used.MicroUSD, &used.ModelCalls, &used.ToolCalls}, extra...)...)
	return limits, used, err
}

// BudgetCharge charges a family's budget atomically: the budget row is
// locked, checked and updated in one transaction.
func (s *Store) BudgetCharge(ctx context.Context, p store.BudgetChargeParams) (store.Budget, error) {
	if err := store.CheckName("root id", p.RootID, true); err != nil {
		return store.Budget{}, fmt.Errorf("budget charge: %w", err)
	}
	var used store.Budget
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		used, err = charge(ctx, tx, p)
		return err
	})
	if err != nil {
		return store.Budget{}, fmt.Errorf("budget charge %q: %w", p.RootID, err)
	}
	return used, nil
}

// charge applies p inside tx and returns the use after it. The budget row
// stays locked until tx ends, so concurrent charges of one family queue up
// and none can overspend.
func charge(ctx context.Context, tx pgx.Tx, p store.BudgetChargeParams) (store.Budget, error) {
	var seq int64
	limits, used, err := scanBudget(tx.QueryRow(ctx, `SELECT `+budgetCols+`, b.root_seq
		FROM hitch_budgets b JOIN hitch_runs r ON r.seq = b.root_seq WHERE r.id = $1 FOR UPDATE OF b`, p.RootID), &seq)
	if errors.Is(err, pgx.ErrNoRows) {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM hitch_runs WHERE id = $1)`, p.RootID).Scan(&exists); err != nil {
			return store.Budget{}, err
		}
		if !exists {
			return store.Budget{}, store.ErrNotFound
		}
		return store.Budget{}, nil // no budget: every charge is accepted
	}
	if err != nil {
		return store.Budget{}, err
	}
	next, err := store.Charged(p.RootID, limits, used, p)
	if err != nil {
		return store.Budget{}, err
	}
	_, err = tx.Exec(ctx, `UPDATE hitch_budgets SET used_tokens = $2, used_micro_usd = $3, used_model_calls = $4,
		used_tool_calls = $5 WHERE root_seq = $1`,
		seq, next.Tokens, next.MicroUSD, next.ModelCalls, next.ToolCalls)
	if err != nil {
		return store.Budget{}, err
	}
	next.WallMS = 0
	return next, nil
}

// BudgetGet returns a family's limits and use.
func (s *Store) BudgetGet(ctx context.Context, rootID string) (limits, used store.Budget, ok bool, err error) {
	if s.closed.Load() {
		return limits, used, false, ErrClosed
	}
	var exists bool
	err = s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM hitch_runs WHERE id = $1)`, rootID).Scan(&exists)
	if err == nil && exists {
		limits, used, err = scanBudget(s.pool.QueryRow(ctx, `SELECT `+budgetCols+`
			FROM hitch_budgets b JOIN hitch_runs r ON r.seq = b.root_seq WHERE r.id = $1`, rootID))
		if errors.Is(err, pgx.ErrNoRows) {
			return store.Budget{}, store.Budget{}, false, nil
		}
	}
	switch {
	case err != nil:
		return store.Budget{}, store.Budget{}, false, fmt.Errorf("budget get %q: %w", rootID, err)
	case !exists:
		return store.Budget{}, store.Budget{}, false, fmt.Errorf("budget get %q: %w", rootID, store.ErrNotFound)
	}
	return limits, used, true, nil
}
