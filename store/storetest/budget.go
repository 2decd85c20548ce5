package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/hitch-dev/hitch/store"
)

func testBudget(t *testing.T, open func(*testing.T) store.Store) {
	t.Run("ChargeAndLimits", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		limits := store.Budget{Tokens: 100, ToolCalls: 3, WallMS: 60000}
		e.createWith(store.RunCreateParams{ID: "root", Agent: "a", Entries: entries("root", 1), Budget: &limits})
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
		e.createWith(store.RunCreateParams{ID: "root", Agent: "a", Entries: entries("root", 1), Budget: &store.Budget{ToolCalls: 10}})
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
}
