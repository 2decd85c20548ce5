package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/hitch-dev/hitch/hitchtype"

	"github.com/hitch-dev/hitch/store"
)

func testBudget(t *testing.T, open opener) {
	t.Run("ChargeAndLimits", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		limits := store.Budget{Tokens: 100, ToolCalls: 3, WallMS: 60000}
		e.createRoot(limits)
		e.createWith(store.RunCreateParams{ID: "kid", RootID: "root", ParentID: "root", Depth: 1, Agent: "a", Entries: entries("kid", 1)})

		got, used, ok, err := e.s.BudgetGet(e.ctx, "root")
		if err != nil || !ok || got != limits || used != (store.Budget{}) {
			t.Fatalf("budget get: %+v %+v %v %v", got, used, ok, err)
		}
		u, err := e.s.BudgetCharge(e.ctx, store.BudgetChargeParams{RootID: "root", Charge: store.Budget{Tokens: 60, ToolCalls: 1}})
		if err != nil || u.Tokens != 60 || u.ToolCalls != 1 {
			t.Fatalf("charge: %+v %v", u, err)
		}
		// A reservation past a limit is refused and writes nothing.
		_, err = e.s.BudgetCharge(e.ctx, store.BudgetChargeParams{RootID: "root", Charge: store.Budget{Tokens: 41}})
		var be *store.BudgetExhaustedError
		if !errors.As(err, &be) || be.Which != "tokens" || be.Limit != 100 || be.Used != 60 {
			t.Fatalf("charge past the limit: %v", err)
		}
		// Settling is not checked: the work has happened.
		u, err = e.s.BudgetCharge(e.ctx, store.BudgetChargeParams{RootID: "root", Adjust: store.Budget{Tokens: 50}})
		if err != nil || u.Tokens != 110 {
			t.Fatalf("adjust: %+v %v", u, err)
		}
		// Counters without a limit are never refused.
		if _, err := e.s.BudgetCharge(e.ctx, store.BudgetChargeParams{RootID: "root", Charge: store.Budget{ModelCalls: 1000}}); err != nil {
			t.Fatalf("unlimited counter: %v", err)
		}
		_, used, _, _ = e.s.BudgetGet(e.ctx, "root")
		if used.Tokens != 110 || used.ModelCalls != 1000 || used.ToolCalls != 1 {
			t.Fatalf("use = %+v", used)
		}
		// A run without a budget accepts everything; a missing one is not found.
		if _, err := e.s.BudgetCharge(e.ctx, store.BudgetChargeParams{RootID: "kid", Charge: store.Budget{Tokens: 1 << 40}}); err != nil {
			t.Fatalf("charge a run without a budget: %v", err)
		}
		if _, _, ok, err := e.s.BudgetGet(e.ctx, "kid"); ok || err != nil {
			t.Fatalf("budget of a run without one: %v %v", ok, err)
		}
		_, err = e.s.BudgetCharge(e.ctx, store.BudgetChargeParams{RootID: "nope", Charge: store.Budget{Tokens: 1}})
		wantErr(t, "charge a missing root", err, store.ErrNotFound)
		_, _, _, err = e.s.BudgetGet(e.ctx, "nope")
		wantErr(t, "get a missing root", err, store.ErrNotFound)
	})

	t.Run("RaceNeverOverspends", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		e.createRoot(store.Budget{ToolCalls: 10})
		var wg sync.WaitGroup
		var mu sync.Mutex
		granted := 0
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.s.BudgetCharge(e.ctx, store.BudgetChargeParams{RootID: "root", Charge: store.Budget{ToolCalls: 1}})
				if err == nil {
					mu.Lock()
					granted++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if _, used, _, _ := e.s.BudgetGet(e.ctx, "root"); granted != 10 || used.ToolCalls != 10 {
			t.Fatalf("granted %d reservations, use %d; want 10 of 10", granted, used.ToolCalls)
		}
	})

	t.Run("WithAppend", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		e.createRoot(store.Budget{Tokens: 100, ToolCalls: 2})
		e.child("kid", "root")
		l := e.claim("root", "me", longTTL)
		run := e.append(l, store.JournalAppendParams{After: 1, Entries: entries("call", 1),
			Charge: &store.BudgetCharge{RootID: "root", Charge: store.Budget{Tokens: 60, ToolCalls: 1}}})
		if run.Position != 2 {
			t.Fatalf("append with a charge: position %d, want 2", run.Position)
		}
		e.wantUse("root", store.Budget{Tokens: 60, ToolCalls: 1})

		// A child's append charges its family's root; RootID may be left out.
		k := e.claim("kid", "me", longTTL)
		e.append(k, store.JournalAppendParams{After: 1, Entries: entries("call", 1),
			Charge: &store.BudgetCharge{Charge: store.Budget{ToolCalls: 1}, Adjust: store.Budget{Tokens: -10}}})
		e.wantUse("root", store.Budget{Tokens: 50, ToolCalls: 2})

		// Settling is not checked, and may come with a status change.
		run = e.append(l, store.JournalAppendParams{After: 2, Entries: entries("reply", 1), Status: hitchtype.StatusWaiting,
			Charge: &store.BudgetCharge{Adjust: store.Budget{Tokens: 70}}})
		if run.Status != hitchtype.StatusWaiting || run.Position != 3 {
			t.Fatalf("append with a settlement and a status: %+v", run)
		}
		e.wantUse("root", store.Budget{Tokens: 120, ToolCalls: 2})

		// A charge to another family is refused and writes nothing.
		e.create("other")
		before := e.get("kid")
		_, err := e.s.JournalAppend(e.ctx, store.JournalAppendParams{RunID: "kid", Token: k.Token, After: 2,
			Entries: entries("x", 1), Charge: &store.BudgetCharge{RootID: "other", Adjust: store.Budget{Tokens: 1}}})
		if err == nil {
			t.Fatal("append charging another family succeeded")
		}
		e.unchanged(before)
		e.wantUse("root", store.Budget{Tokens: 120, ToolCalls: 2})

		// A family without a budget takes every charge.
		o := e.claim("other", "me", longTTL)
		e.append(o, store.JournalAppendParams{After: 1, Entries: entries("x", 1),
			Charge: &store.BudgetCharge{Charge: store.Budget{Tokens: 1 << 40}}})
	})

	t.Run("ExhaustedWritesNothing", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		e.createRoot(store.Budget{ModelCalls: 2})
		l := e.claim("root", "me", longTTL)
		e.append(l, store.JournalAppendParams{After: 1, Entries: entries("call", 1),
			Charge: &store.BudgetCharge{Charge: store.Budget{ModelCalls: 1}}})
		e.append(l, store.JournalAppendParams{After: 2, Entries: entries("call", 1),
			Charge: &store.BudgetCharge{Charge: store.Budget{ModelCalls: 1}}})
		before := e.get("root")
		used := e.wantUse("root", store.Budget{ModelCalls: 2})
		for _, p := range []store.JournalAppendParams{
			{Entries: entries("call", 2)},
			{Entries: entries("end", 1), Status: hitchtype.StatusCompleted, Outcome: json.RawMessage(`"x"`)},
			{Status: hitchtype.StatusWaiting},
		} {
			p.RunID, p.Token, p.After = "root", l.Token, 3
			p.Charge = &store.BudgetCharge{Charge: store.Budget{ModelCalls: 1}, Adjust: store.Budget{Tokens: 5}}
			_, err := e.s.JournalAppend(e.ctx, p)
			var be *store.BudgetExhaustedError
			if !errors.As(err, &be) || be.Which != "model_calls" || be.RootID != "root" || be.Limit != 2 || be.Used != 2 {
				t.Fatalf("append past the budget: %v, want a *BudgetExhaustedError on model_calls", err)
			}
			e.unchanged(before)
			e.wantUse("root", used)
		}
	})

	t.Run("RefusedAppendChargesNothing", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		e.createRoot(store.Budget{Tokens: 1000})
		a := e.claim("root", "A", shortTTL)
		e.waitPast(a.ExpiresAt)
		b := e.claim("root", "B", longTTL)
		charge := &store.BudgetCharge{Charge: store.Budget{Tokens: 10}, Adjust: store.Budget{Tokens: 1}}
		before := e.get("root")
		_, err := e.s.JournalAppend(e.ctx, store.JournalAppendParams{RunID: "root", Token: a.Token, After: 1,
			Entries: entries("A", 1), Charge: charge})
		wantErr(t, "stale append with a charge", err, store.ErrFenced)
		e.unchanged(before)
		e.wantUse("root", store.Budget{})

		// The same append twice (a retry after a lost answer) counts once.
		p := store.JournalAppendParams{RunID: "root", Token: b.Token, After: 1, Entries: entries("B", 1), Charge: charge}
		if _, err := e.s.JournalAppend(e.ctx, p); err != nil {
			t.Fatalf("append with a charge: %v", err)
		}
		before = e.get("root")
		_, err = e.s.JournalAppend(e.ctx, p)
		wantErr(t, "repeated append with a charge", err, store.ErrConflict)
		e.unchanged(before)
		e.wantUse("root", store.Budget{Tokens: 11})

		// An ended run is charged nothing either.
		e.append(b, store.JournalAppendParams{After: 2, Entries: entries("end", 1), Status: hitchtype.StatusFailed})
		p.After = 3
		_, err = e.s.JournalAppend(e.ctx, p)
		wantErr(t, "append with a charge to an ended run", err, store.ErrEnded)
		e.wantUse("root", store.Budget{Tokens: 11})
	})

	t.Run("RaceWithAppendNeverOverspends", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		e.createRoot(store.Budget{ToolCalls: 5})
		const kids = 12
		leases := make([]store.Lease, kids)
		for i := range leases {
			id := fmt.Sprint("kid", i)
			e.child(id, "root")
			leases[i] = e.claim(id, "me", longTTL)
		}
		var wg sync.WaitGroup
		errs := make([]error, kids)
		for i, l := range leases {
			wg.Go(func() {
				_, errs[i] = e.s.JournalAppend(e.ctx, store.JournalAppendParams{RunID: l.Run.ID, Token: l.Token, After: 1,
					Entries: entries("call", 1), Charge: &store.BudgetCharge{Charge: store.Budget{ToolCalls: 1}}})
			})
		}
		wg.Wait()
		granted := 0
		for i, err := range errs {
			var be *store.BudgetExhaustedError
			switch {
			case err == nil:
				granted++
				if p := e.get(leases[i].Run.ID).Position; p != 2 {
					t.Fatalf("granted append of %s: position %d, want 2", leases[i].Run.ID, p)
				}
			case errors.As(err, &be):
				if p := e.get(leases[i].Run.ID).Position; p != 1 {
					t.Fatalf("refused append of %s: position %d, want 1", leases[i].Run.ID, p)
				}
			default:
				t.Fatalf("append %d: %v", i, err)
			}
		}
		if granted != 5 {
			t.Fatalf("granted %d appends, want 5", granted)
		}
		e.wantUse("root", store.Budget{ToolCalls: 5})
	})
}

// wantUse checks a family's use and returns it.
func (e *env) wantUse(root string, want store.Budget) store.Budget {
	e.t.Helper()
	_, used, _, err := e.s.BudgetGet(e.ctx, root)
	if err != nil {
		e.t.Fatalf("budget get %q: %v", root, err)
	}
	if used != want {
		e.t.Fatalf("use of %s = %+v, want %+v", root, used, want)
	}
	return used
}
