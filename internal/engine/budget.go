package engine

import (
	"errors"
	"fmt"
	"math"
	"slices"
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

// loadFamily reads the family budget once per runner (a run Start just
// created has it at hand).
func (r *runner) loadFamily() error {
	var limits store.Budget
	var ok bool
	if r.born != nil {
		// A root run Start just created: its budget is the one it was
		// created with.
		if b := r.born.budget; b != nil {
			limits, ok = *b, true
		}
	} else {
		var err error
		if limits, _, ok, err = r.e.cfg.Store.BudgetGet(r.ctx, r.row.RootID); err != nil {
			return fmt.Errorf("read family budget: %w", err)
		}
	}
	r.fam = family{limits: limits, ok: ok}
	if ok && limits.WallMS > 0 {
		root := r.row
		if r.row.RootID != r.runID {
			var err error
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

// Every family charge rides on the append that journals the work it pays
// for: a model attempt, a tool body's start, a sub-agent's start. Its
// settlement rides on the append that journals the result. A retried or
// refused append therefore never counts twice, and a journaled charge is
// never lost.

// beforeModel checks the run's own token budget and the family's wall
// time, and prices the family's reservation for a model call: one call,
// the request's estimated input tokens and their price. The reservation
// is charged by reserve with the attempt's entry. est is the request's
// estimated input tokens, from its context account; name is the model
// the call goes to.
func (r *runner) beforeModel(est int64, name string) (res store.Budget, ended bool, err error) {
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
	res = store.Budget{ModelCalls: 1, Tokens: est}
	if r.fam.limits.MicroUSD > 0 {
		micro, known := r.microUSD(name, &model.Usage{InputTokens: &est, OutputTokens: model.Int64(0), CachedInputTokens: model.Int64(0)})
		if !known {
			return res, true, r.finish(Outcome{Status: hitchtype.StatusFailed, Reason: "budget_unverifiable",
				Error: fmt.Sprintf("the family has a USD budget and model %s has no price (add one to the price table)", name)})
		}
		res.MicroUSD = micro
	}
	return res, false, nil
}

// reserve commits the staged entries and e, charging res to the family
// budget in the same append. A reservation past a limit writes nothing:
// e is taken back out of the state and the run ends budget_exhausted.
// Without a charge to make, e is made durable as how says.
func (r *runner) reserve(res store.Budget, e store.EntryInput, how durability) (ended bool, err error) {
	if !r.fam.ok || res == (store.Budget{}) {
		switch how {
		case durableNow:
			return false, r.commit(e)
		case withNext:
			r.stageDeferred(e)
			return false, r.flush()
		default:
			r.stageDeferred(e)
			return false, r.flushInFlight()
		}
	}
	before, urgent := slices.Clone(r.pending), r.urgent
	err = r.write(store.JournalAppendParams{Charge: &store.BudgetCharge{Charge: res}}, e)
	var be *store.BudgetExhaustedError
	if !errors.As(err, &be) {
		return false, err
	}
	// Nothing was written: rebuild the state from the journal and stage
	// again what was staged before e.
	entries, err := readAll(r.ctx, r.e.cfg.Store, r.runID)
	if err != nil {
		return false, fmt.Errorf("read journal: %w", err)
	}
	st, err := fold(entries)
	if err != nil {
		return false, fmt.Errorf("fold journal of %s: %w", r.runID, err)
	}
	r.st, r.pending = st, nil
	for _, e := range before {
		r.stageDeferred(e)
	}
	r.urgent = urgent
	return r.budgetError(be)
}

// durability is when reserve's entry must be durable.
type durability int

const (
	// durableNow: before reserve returns.
	durableNow durability = iota
	// withNext: it rides the next commit (see stageDeferred); what is
	// staged and must be durable now is committed before reserve returns.
	withNext
	// inFlight: as withNext, but that commit may still be in flight when
	// reserve returns (see flushInFlight).
	inFlight
)

// afterReply settles a reservation to what the reply really cost; the
// settlement rides on the next append, which journals the reply. A reply
// without usage under a token or USD budget, the run's own or the
// family's, ends the run before anything acts on it: the budget can no
// longer be kept.
func (r *runner) afterReply(res store.Budget, name string, usage *model.Usage) (ended bool, err error) {
	if r.agent.Limits.MaxTokens > 0 && (usage == nil || usage.InputTokens == nil || usage.OutputTokens == nil) {
		return true, r.finish(Outcome{Status: hitchtype.StatusFailed, Reason: "budget_unverifiable",
			Error: "a token budget is set and a model reply did not report its usage, so the budget cannot be kept"})
	}
	if ok, why := r.settleModel(res, name, usage); !ok {
		return true, r.finish(Outcome{Status: hitchtype.StatusFailed, Reason: "budget_unverifiable", Error: why})
	}
	return false, nil
}

// settleModel adds the settlement of a model reservation to the next
// append. ok is false when a limited counter cannot be settled (the reply
// reported no usage, or its cost is unknown); the reservation then stands.
func (r *runner) settleModel(res store.Budget, name string, usage *model.Usage) (ok bool, why string) {
	if !r.fam.ok || res == (store.Budget{}) {
		return true, ""
	}
	needs := r.fam.limits.Tokens > 0 || r.fam.limits.MicroUSD > 0
	if usage == nil || usage.InputTokens == nil || usage.OutputTokens == nil {
		return !needs, "the family has a token or USD budget and a model reply did not report its usage"
	}
	actual := store.Budget{Tokens: *usage.InputTokens + *usage.OutputTokens}
	if r.fam.limits.MicroUSD > 0 {
		micro, known := r.microUSD(name, usage)
		if !known {
			return false, "the family has a USD budget and a reply's cost is unknown"
		}
		actual.MicroUSD = micro
	}
	r.adjust.Tokens += actual.Tokens - res.Tokens
	r.adjust.MicroUSD += actual.MicroUSD - res.MicroUSD
	return true, ""
}

// toolCharge is the reservation of one tool body run or sub-agent start.
func (r *runner) toolCharge() store.Budget {
	if !r.fam.ok {
		return store.Budget{}
	}
	return store.Budget{ToolCalls: 1}
}

func (r *runner) microUSD(name string, u *model.Usage) (int64, bool) {
	usd, known := r.e.cfg.Prices.Cost(name, u)
	return int64(math.Ceil(usd * 1e6)), known
}
