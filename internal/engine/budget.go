package engine

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/store"
)

// family is what a runner knows of its family's budget.
type family struct {
	limits store.Budget
	ok     bool // the root has a budget
	start  time.Time
}

// loadFamily reads the family budget once per runner.
func (r *runner) loadFamily() error {
	limits, _, ok, err := r.e.cfg.Store.BudgetGet(r.ctx, r.row.RootID)
	if err != nil {
		return fmt.Errorf("read family budget: %w", err)
	}
	r.fam = family{limits: limits, ok: ok}
	if ok && limits.WallMS > 0 {
		root := r.row
		if r.row.RootID != r.runID {
			if root, err = r.e.cfg.Store.RunGet(r.ctx, r.row.RootID); err != nil {
				return fmt.Errorf("read root run: %w", err)
			}
		}
		r.fam.start = root.CreatedAt
	}
	return nil
}

// exhausted ends the run for a spent budget.
func (r *runner) exhausted(which, detail string) error {
	return r.finish(Outcome{Status: hitchtype.StatusBudgetExhausted, Reason: which, Error: detail})
}

// budgetError turns a refused reservation into the run's end; other errors
// pass through.
func (r *runner) budgetError(err error) (ended bool, _ error) {
	var be *store.BudgetExhaustedError
	if errors.As(err, &be) {
		return true, r.exhausted(be.Which, fmt.Sprintf("the family budget is spent: %s used %d of %d", be.Which, be.Used, be.Limit))
	}
	return false, err
}

// checkWall ends the run when the family's wall time is spent, by the
// store's clock.
func (r *runner) checkWall() (ended bool, err error) {
	if !r.fam.ok || r.fam.limits.WallMS <= 0 {
		return false, nil
	}
	now, err := r.e.cfg.Store.Now(r.ctx)
	if err != nil {
		return false, fmt.Errorf("read store clock: %w", err)
	}
	limit := time.Duration(r.fam.limits.WallMS) * time.Millisecond
	if now.Sub(r.fam.start) >= limit {
		return true, r.exhausted("wall_time", fmt.Sprintf("the family's wall time of %s is spent", limit))
	}
	return false, nil
}

// beforeModel checks the run's own token budget and reserves the family's
// share of a model call: one call, the request's estimated input tokens
// and their price. It returns the reservation to settle later.
func (r *runner) beforeModel(req *model.Request) (res store.Budget, ended bool, err error) {
	lim, u := r.agent.Limits, r.st.usage
	if lim.MaxTokens > 0 && u.Generations > 0 {
		if u.InputTokens == nil || u.OutputTokens == nil {
			return res, true, r.finish(Outcome{Status: hitchtype.StatusFailed, Reason: "budget_unverifiable",
				Error: "a token budget is set and a model call did not report its usage, so the budget cannot be kept"})
		}
		if used := *u.InputTokens + *u.OutputTokens; used >= lim.MaxTokens {
			return res, true, r.exhausted("tokens", fmt.Sprintf("the run used %d of its %d tokens", used, lim.MaxTokens))
		}
	}
	if ended, err := r.checkWall(); ended || err != nil {
		return res, ended, err
	}
	if !r.fam.ok {
		return res, false, nil
	}
	est := estimateTokens(req)
	res = store.Budget{ModelCalls: 1, Tokens: est}
	if r.fam.limits.MicroUSD > 0 {
		micro, known := r.microUSD(&model.Usage{InputTokens: &est, OutputTokens: model.Int64(0), CachedInputTokens: model.Int64(0)})
		if !known {
			return res, true, r.finish(Outcome{Status: hitchtype.StatusFailed, Reason: "budget_unverifiable",
				Error: fmt.Sprintf("the family has a USD budget and model %s has no price (add one to the price table)", r.agent.Model.Name())})
		}
		res.MicroUSD = micro
	}
	if _, err := r.e.cfg.Store.BudgetCharge(r.ctx, store.BudgetChargeParams{RootID: r.row.RootID, Charge: res}); err != nil {
		ended, err := r.budgetError(err)
		return res, ended, err
	}
	return res, false, nil
}

// afterReply settles a reservation to what the reply really cost. A reply
// without usage under a token or USD budget, the run's own or the
// family's, ends the run before anything acts on it: the budget can no
// longer be kept.
func (r *runner) afterReply(res store.Budget, usage *model.Usage) (ended bool, err error) {
	if r.agent.Limits.MaxTokens > 0 && (usage == nil || usage.InputTokens == nil || usage.OutputTokens == nil) {
		return true, r.finish(Outcome{Status: hitchtype.StatusFailed, Reason: "budget_unverifiable",
			Error: "a token budget is set and a model reply did not report its usage, so the budget cannot be kept"})
	}
	if !r.fam.ok {
		return false, nil
	}
	needs := r.fam.limits.Tokens > 0 || r.fam.limits.MicroUSD > 0
	if usage == nil || usage.InputTokens == nil || usage.OutputTokens == nil {
		if needs {
			return true, r.finish(Outcome{Status: hitchtype.StatusFailed, Reason: "budget_unverifiable",
				Error: "the family has a token or USD budget and a model reply did not report its usage"})
		}
		return false, nil
	}
	actual := store.Budget{Tokens: *usage.InputTokens + *usage.OutputTokens}
	if r.fam.limits.MicroUSD > 0 {
		micro, known := r.microUSD(usage)
		if !known {
			return true, r.finish(Outcome{Status: hitchtype.StatusFailed, Reason: "budget_unverifiable",
				Error: "the family has a USD budget and a reply's cost is unknown"})
		}
		actual.MicroUSD = micro
	}
	adjust := store.Budget{Tokens: actual.Tokens - res.Tokens, MicroUSD: actual.MicroUSD - res.MicroUSD}
	_, err = r.e.cfg.Store.BudgetCharge(r.ctx, store.BudgetChargeParams{RootID: r.row.RootID, Adjust: adjust})
	return false, err
}

// beforeTool reserves one tool call (a body run, or a sub-agent start).
func (r *runner) beforeTool() (ended bool, err error) {
	if ended, err := r.checkWall(); ended || err != nil {
		return ended, err
	}
	if !r.fam.ok {
		return false, nil
	}
	_, err = r.e.cfg.Store.BudgetCharge(r.ctx, store.BudgetChargeParams{RootID: r.row.RootID, Charge: store.Budget{ToolCalls: 1}})
	if err != nil {
		return r.budgetError(err)
	}
	return false, nil
}

func (r *runner) microUSD(u *model.Usage) (int64, bool) {
	usd, known := r.e.cfg.Prices.Cost(r.agent.Model.Name(), u)
	return int64(math.Ceil(usd * 1e6)), known
}

// estimateTokens guesses a request's input tokens, four bytes a token.
func estimateTokens(req *model.Request) int64 {
	n := len(req.Instructions)
	for _, m := range req.Messages {
		n += len(m.Text) + len(m.ToolCallID) + len(m.ToolName)
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments) + len(c.ID)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	if req.Answer != nil {
		n += len(req.Answer.Schema)
	}
	return int64(n/4 + 1)
}
