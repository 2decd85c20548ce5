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

// budgetGetSQL reads a family's budget from its root's row: no row when
// the root does not exist, NULL limits when it has no budget. One
// statement, because a runner asks for its family's budget as it starts.
const budgetGetSQL = `SELECT b.root_seq IS NOT NULL, ` + budgetCols + `
FROM hitch_runs r LEFT JOIN hitch_budgets b ON b.root_seq = r.seq WHERE r.id = $1`

// BudgetGet returns a family's limits and use.
func (s *Store) BudgetGet(ctx context.Context, rootID string) (limits, used store.Budget, ok bool, err error) {
	if s.closed.Load() {
		return limits, used, false, ErrClosed
	}
	var b [9]*int64
	err = s.pool.QueryRow(ctx, budgetGetSQL, rootID).Scan(&ok, &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6], &b[7], &b[8])
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.Budget{}, store.Budget{}, false, fmt.Errorf("budget get %q: %w", rootID, store.ErrNotFound)
	case err != nil:
		return store.Budget{}, store.Budget{}, false, fmt.Errorf("budget get %q: %w", rootID, err)
	case !ok:
		return store.Budget{}, store.Budget{}, false, nil
	}
	limits = store.Budget{Tokens: *b[0], MicroUSD: *b[1], ModelCalls: *b[2], ToolCalls: *b[3], WallMS: *b[4]}
	used = store.Budget{Tokens: *b[5], MicroUSD: *b[6], ModelCalls: *b[7], ToolCalls: *b[8]}
	return limits, used, true, nil
}
