package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/store"
)

func testTriggers(t *testing.T, open opener) {
	runCases(t, open, func(t *testing.T, e *env) *trigEnv {
		return &trigEnv{env: e, ts: face[store.TriggerStore](t, e.s, "store.TriggerStore")}
	}, []testCase[*trigEnv]{
		{"CreateIdempotent", testTriggerCreate},
		{"ListAndFilters", testTriggerList},
		{"ClaimOnlyWhenDue", testTriggerClaimDue},
		{"ClaimFencedRetire", testTriggerFenced},
		{"RetireToDone", testTriggerDone},
		{"ReleaseRetriesLater", testTriggerRelease},
		{"RetireSkipped", testTriggerSkipped},
		{"PauseResumeRemove", testTriggerPause},
		{"SessionBound", testTriggerBound},
		{"ClaimConcurrent", testTriggerConcurrent},
		{"BadInput", testTriggerBadInput},
	})
}

type trigEnv struct {
	*env
	ts store.TriggerStore
}

func spec(tag string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"cron":"* * * * *","tag":%q}`, tag))
}

func (e *trigEnv) create(id string, next time.Time) store.Trigger {
	e.t.Helper()
	tr, created, err := e.ts.TriggerCreate(e.ctx, store.TriggerCreateParams{ID: id, Spec: spec(id), NextFire: next})
	if err != nil || !created {
		e.t.Fatalf("create trigger %s: created=%v %v", id, created, err)
	}
	return tr
}

func (e *trigEnv) get(id string) store.Trigger {
	e.t.Helper()
	tr, err := e.ts.TriggerGet(e.ctx, id)
	if err != nil {
		e.t.Fatalf("get trigger %s: %v", id, err)
	}
	return tr
}

func (e *trigEnv) claim(owner string, ttl time.Duration, limit int) ([]store.Trigger, time.Time) {
	e.t.Helper()
	ts, now, err := e.ts.TriggerClaim(e.ctx, store.TriggerClaimParams{Owner: owner, TTL: ttl, Limit: limit})
	if err != nil {
		e.t.Fatalf("claim triggers as %s: %v", owner, err)
	}
	return ts, now
}

func triggerIDs(ts []store.Trigger) []string {
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	return ids
}

func retireOf(t store.Trigger, next time.Time) store.TriggerRetireParams {
	return store.TriggerRetireParams{ID: t.ID, Owner: t.ClaimOwner, Token: t.ClaimToken, Occurrence: t.NextFire, Fired: true, Next: next}
}

// ahead is how far in the future a test puts what it then waits for: far
// on a driven clock, a moment on a real one.
func (e *trigEnv) ahead() time.Duration {
	if e.clock != nil {
		return time.Hour
	}
	return time.Second
}

func testTriggerCreate(t *testing.T, e *trigEnv) {
	next := e.now().Add(e.ahead())
	a := e.create("a", next)
	if a.ID != "a" || a.Tenant != "default" || a.State != store.TriggerActive || !sameTime(a.NextFire, next) ||
		a.FireCount != 0 || !a.LastFire.IsZero() || a.ClaimToken != 0 || !sameJSON(a.Spec, spec("a")) || a.CreatedAt.IsZero() {
		t.Fatalf("created %+v", a)
	}
	// The same id again returns the first, whatever it carries.
	again, created, err := e.ts.TriggerCreate(e.ctx, store.TriggerCreateParams{ID: "a", Spec: spec("other"), NextFire: next.Add(time.Hour)})
	if err != nil || created || !sameJSON(again.Spec, spec("a")) || !sameTime(again.NextFire, next) {
		t.Fatalf("create again: created=%v %v %+v", created, err, again)
	}
	// Replace with the same spec changes nothing; with another, it replaces
	// the definition and fences a claim in flight.
	e.waitPast(next)
	cl, _ := e.claim("n1", longTTL, 10)
	if len(cl) != 1 {
		t.Fatalf("claimed %v", triggerIDs(cl))
	}
	same, created, err := e.ts.TriggerCreate(e.ctx, store.TriggerCreateParams{ID: "a", Spec: spec("a"), NextFire: next.Add(time.Hour), Replace: true})
	if err != nil || created || same.ClaimToken != cl[0].ClaimToken || !sameTime(same.NextFire, next) {
		t.Fatalf("replace with the same spec: created=%v %v %+v", created, err, same)
	}
	later := next.Add(48 * time.Hour)
	repl, created, err := e.ts.TriggerCreate(e.ctx, store.TriggerCreateParams{ID: "a", Spec: spec("b"), NextFire: later, Replace: true})
	if err != nil || created || !sameJSON(repl.Spec, spec("b")) || !sameTime(repl.NextFire, later) || repl.ClaimToken <= cl[0].ClaimToken ||
		repl.ClaimOwner != "" {
		t.Fatalf("replace: created=%v %v %+v", created, err, repl)
	}
	_, err = e.ts.TriggerRetire(e.ctx, retireOf(cl[0], later))
	wantErr(t, "retire after a replace", err, store.ErrTriggerFenced)
	_, err = e.ts.TriggerGet(e.ctx, "missing")
	wantErr(t, "get a missing trigger", err, store.ErrTriggerNotFound)
	// Tenant and session are kept.
	tr, _, err := e.ts.TriggerCreate(e.ctx, store.TriggerCreateParams{ID: "t", Tenant: "acme", SessionID: "s1", Spec: spec("t"), NextFire: next, Paused: true})
	if err != nil || tr.Tenant != "acme" || tr.SessionID != "s1" || tr.State != store.TriggerPaused {
		t.Fatalf("create with tenant, session, paused: %v %+v", err, tr)
	}
}

func testTriggerList(t *testing.T, e *trigEnv) {
	next := e.now().Add(time.Hour)
	for i := range 7 {
		_, _, err := e.ts.TriggerCreate(e.ctx, store.TriggerCreateParams{ID: fmt.Sprintf("t%d", i), SessionID: fmt.Sprintf("s%d", i%2),
			Tenant: []string{"", "acme"}[i%3/2], Spec: spec("x"), NextFire: next})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.PauseTrigger(e.ctx, e.ts, "t3"); err != nil {
		t.Fatal(err)
	}
	list := func(p store.TriggerListParams) []string {
		t.Helper()
		ts, err := e.ts.TriggerList(e.ctx, p)
		if err != nil {
			t.Fatalf("list %+v: %v", p, err)
		}
		return triggerIDs(ts)
	}
	for _, c := range []struct {
		p    store.TriggerListParams
		want string
	}{
		{store.TriggerListParams{}, "[t0 t1 t2 t3 t4 t5 t6]"},
		{store.TriggerListParams{Limit: 3}, "[t0 t1 t2]"},
		{store.TriggerListParams{After: "t2", Limit: 3}, "[t3 t4 t5]"},
		{store.TriggerListParams{SessionID: "s1"}, "[t1 t3 t5]"},
		{store.TriggerListParams{State: store.TriggerPaused}, "[t3]"},
		{store.TriggerListParams{Tenant: "acme"}, "[t2 t5]"},
		{store.TriggerListParams{Tenant: "default", SessionID: "s0"}, "[t0 t4 t6]"},
	} {
		if got := fmt.Sprint(list(c.p)); got != c.want {
			t.Errorf("list %+v = %s, want %s", c.p, got, c.want)
		}
	}
	if _, err := e.ts.TriggerList(e.ctx, store.TriggerListParams{Limit: store.MaxTriggerPage + 1}); err == nil {
		t.Fatal("a page past the bound was accepted")
	}
}

func testTriggerClaimDue(t *testing.T, e *trigEnv) {
	now := e.now()
	e.create("late", now.Add(-time.Minute))
	e.create("due", now)
	future := e.create("future", now.Add(e.ahead()))
	got, at := e.claim("n1", 20*time.Hour, 10)
	want := "[late due]"
	if !at.Before(future.NextFire) { // a real clock on a slow machine
		want = "[late due future]"
	}
	if fmt.Sprint(triggerIDs(got)) != want {
		t.Fatalf("claimed %v at %v, want %s (earliest first, nothing early)", triggerIDs(got), at, want)
	}
	if want != "[late due]" {
		return
	}
	if at.Before(now) {
		t.Fatalf("claim's clock %v is before %v", at, now)
	}
	for _, tr := range got {
		if tr.ClaimOwner != "n1" || tr.ClaimToken != 1 || tr.ClaimUntil.Before(at.Add(longTTL).Add(-time.Microsecond)) {
			t.Fatalf("claimed %+v", tr)
		}
	}
	if d, ok, err := e.ts.TriggerNextDue(e.ctx); err != nil || !ok || !sameTime(d, future.NextFire) {
		t.Fatalf("next due = %v %v %v, want %v", d, ok, err, future.NextFire)
	}
	again, at := e.claim("n2", longTTL, 10)
	for _, tr := range again {
		// On a real clock the future one may have come meanwhile.
		if tr.ID != "future" || at.Before(future.NextFire) {
			t.Fatalf("claimed %v: live claims again, or early", triggerIDs(again))
		}
	}
	if len(again) == 1 {
		return
	}
	// The limit bounds a claim; the future one comes when the clock does.
	e.waitPast(future.NextFire)
	got, _ = e.claim("n2", longTTL, 1)
	if fmt.Sprint(triggerIDs(got)) != "[future]" {
		t.Fatalf("claimed %v, want [future]", triggerIDs(got))
	}
}

func testTriggerFenced(t *testing.T, e *trigEnv) {
	now := e.now()
	e.create("a", now)
	first, _ := e.claim("n1", shortTTL, 1)
	if len(first) != 1 {
		t.Fatalf("claimed %v", triggerIDs(first))
	}
	e.waitPast(first[0].ClaimUntil)
	second, _ := e.claim("n2", longTTL, 1)
	if len(second) != 1 || second[0].ClaimToken <= first[0].ClaimToken || second[0].ClaimOwner != "n2" {
		t.Fatalf("claim after expiry: %+v", second)
	}
	// The first claimer wakes up: its retire and release change nothing.
	next := now.Add(e.ahead())
	_, err := e.ts.TriggerRetire(e.ctx, retireOf(first[0], next))
	wantErr(t, "retire under a claim taken over", err, store.ErrTriggerFenced)
	_, err = e.ts.TriggerRelease(e.ctx, store.TriggerReleaseParams{ID: "a", Owner: "n1", Token: first[0].ClaimToken,
		Occurrence: first[0].NextFire, RetryAt: next, Error: "x"})
	wantErr(t, "release under a claim taken over", err, store.ErrTriggerFenced)
	// The right token with the wrong occurrence is refused too.
	wrong := retireOf(second[0], next)
	wrong.Occurrence = now.Add(-time.Hour)
	_, err = e.ts.TriggerRetire(e.ctx, wrong)
	wantErr(t, "retire of another occurrence", err, store.ErrTriggerFenced)
	if tr := e.get("a"); tr.FireCount != 0 || tr.ClaimOwner != "n2" {
		t.Fatalf("refused retires changed the binding: %+v", tr)
	}
	done, err := e.ts.TriggerRetire(e.ctx, store.TriggerRetireParams{ID: "a", Owner: "n2", Token: second[0].ClaimToken,
		Occurrence: second[0].NextFire, Fired: true, Missed: 2, Next: next})
	if err != nil || done.FireCount != 1 || done.MissedCount != 2 || !sameTime(done.LastFire, second[0].NextFire) ||
		!sameTime(done.NextFire, next) || done.ClaimOwner != "" || !done.ClaimUntil.IsZero() || done.State != store.TriggerActive {
		t.Fatalf("retire: %v %+v", err, done)
	}
	// Retiring twice is refused: the occurrence moved on.
	_, err = e.ts.TriggerRetire(e.ctx, retireOf(second[0], next))
	wantErr(t, "retire twice", err, store.ErrTriggerFenced)
	if tr := e.get("a"); tr.FireCount != 1 {
		t.Fatalf("fire count %d after a second retire, want 1", tr.FireCount)
	}
	// A retire without a fire counts only the misses.
	e.waitPast(next)
	c, _ := e.claim("n3", longTTL, 1)
	skipped, err := e.ts.TriggerRetire(e.ctx, store.TriggerRetireParams{ID: "a", Owner: "n3", Token: c[0].ClaimToken,
		Occurrence: c[0].NextFire, Missed: 1, Next: next.Add(time.Hour)})
	if err != nil || skipped.FireCount != 1 || skipped.MissedCount != 3 || !sameTime(skipped.LastFire, second[0].NextFire) {
		t.Fatalf("retire without a fire: %v %+v", err, skipped)
	}
}

func testTriggerDone(t *testing.T, e *trigEnv) {
	e.create("once", e.now())
	c, _ := e.claim("n", longTTL, 1)
	done, err := e.ts.TriggerRetire(e.ctx, retireOf(c[0], time.Time{}))
	if err != nil || done.State != store.TriggerDone || !done.NextFire.IsZero() || done.FireCount != 1 {
		t.Fatalf("retire the last occurrence: %v %+v", err, done)
	}
	e.waitPast(e.now().Add(e.ahead()))
	if again, _ := e.claim("n", longTTL, 10); len(again) != 0 {
		t.Fatalf("a done binding was claimed: %v", triggerIDs(again))
	}
	if _, ok, err := e.ts.TriggerNextDue(e.ctx); err != nil || ok {
		t.Fatalf("next due with nothing active: ok=%v %v", ok, err)
	}
	// Pausing or resuming a done binding leaves it done.
	for _, f := range []func() (store.Trigger, error){
		func() (store.Trigger, error) { return store.PauseTrigger(e.ctx, e.ts, "once") },
		func() (store.Trigger, error) { return store.ResumeTrigger(e.ctx, e.ts, "once") },
	} {
		if tr, err := f(); err != nil || tr.State != store.TriggerDone {
			t.Fatalf("pause or resume a done binding: %v %+v", err, tr)
		}
	}
}

func testTriggerRelease(t *testing.T, e *trigEnv) {
	now := e.now()
	e.create("a", now)
	c, _ := e.claim("n1", longTTL, 1)
	retry := now.Add(e.ahead())
	long := "\x00" + strings.Repeat("é", store.MaxTriggerErrorBytes)
	r, err := e.ts.TriggerRelease(e.ctx, store.TriggerReleaseParams{ID: "a", Owner: "n1", Token: c[0].ClaimToken,
		Occurrence: c[0].NextFire, RetryAt: retry, Error: "agent unknown" + long})
	if err != nil || r.Failures != 1 || r.ClaimOwner != "" || !sameTime(r.ClaimUntil, retry) || !sameTime(r.NextFire, c[0].NextFire) ||
		len(r.LastError) > store.MaxTriggerErrorBytes || r.LastError[:13] != "agent unknown" {
		t.Fatalf("release: %v %+v", err, r)
	}
	if d, ok, err := e.ts.TriggerNextDue(e.ctx); err != nil || !ok || !sameTime(d, retry) {
		t.Fatalf("next due = %v %v %v, want the retry time %v", d, ok, err, retry)
	}
	if again, _ := e.claim("n2", longTTL, 1); len(again) != 0 {
		t.Fatalf("claimed before its retry time: %v", triggerIDs(again))
	}
	e.waitPast(retry)
	again, _ := e.claim("n2", longTTL, 1)
	if len(again) != 1 || again[0].Failures != 1 {
		t.Fatalf("claim at the retry time: %+v", again)
	}
	ok, err := e.ts.TriggerRetire(e.ctx, retireOf(again[0], retry.Add(time.Hour)))
	if err != nil || ok.Failures != 0 || ok.LastError != "" {
		t.Fatalf("a retire clears the failures: %v %+v", err, ok)
	}
}

// testTriggerSkipped: an occurrence a hook denied is settled as skipped:
// counted apart from fires, with its time and reason kept (cut as an error
// is); the schedule moves on, and a later fire keeps the skip's record.
func testTriggerSkipped(t *testing.T, e *trigEnv) {
	now := e.now()
	e.create("s", now)
	c, _ := e.claim("n", longTTL, 1)
	next := now.Add(e.ahead())
	p := retireOf(c[0], next)
	p.Fired, p.Skipped, p.SkipReason = false, true, "gate: not on a holiday\x00"+strings.Repeat("x", store.MaxTriggerErrorBytes)
	r, err := e.ts.TriggerRetire(e.ctx, p)
	if err != nil || r.SkipCount != 1 || r.FireCount != 0 || !sameTime(r.LastSkip, c[0].NextFire) || !r.LastFire.IsZero() ||
		!sameTime(r.NextFire, next) || r.ClaimOwner != "" || len(r.SkipReason) > store.MaxTriggerErrorBytes ||
		!strings.HasPrefix(r.SkipReason, "gate: not on a holiday") || strings.Contains(r.SkipReason, "\x00") {
		t.Fatalf("retire skipped: %v %+v", err, r)
	}
	if got := e.get("s"); got.SkipCount != 1 || got.SkipReason != r.SkipReason || !sameTime(got.LastSkip, c[0].NextFire) {
		t.Fatalf("the skip is not kept: %+v", got)
	}
	e.waitPast(next)
	c2, _ := e.claim("n", longTTL, 1)
	if len(c2) != 1 {
		t.Fatalf("the next occurrence was not claimed after a skip")
	}
	f, err := e.ts.TriggerRetire(e.ctx, retireOf(c2[0], next.Add(time.Hour)))
	if err != nil || f.FireCount != 1 || f.SkipCount != 1 || f.SkipReason != r.SkipReason || !sameTime(f.LastSkip, c[0].NextFire) {
		t.Fatalf("a fire after a skip: %v %+v", err, f)
	}
}

func testTriggerPause(t *testing.T, e *trigEnv) {
	now := e.now()
	e.create("a", now)
	p, err := store.PauseTrigger(e.ctx, e.ts, "a")
	if err != nil || p.State != store.TriggerPaused {
		t.Fatalf("pause: %v %+v", err, p)
	}
	if p2, err := store.PauseTrigger(e.ctx, e.ts, "a"); err != nil || p2.State != store.TriggerPaused {
		t.Fatalf("pause twice: %v %+v", err, p2)
	}
	if c, _ := e.claim("n", longTTL, 10); len(c) != 0 {
		t.Fatalf("a paused binding was claimed: %v", triggerIDs(c))
	}
	if _, ok, _ := e.ts.TriggerNextDue(e.ctx); ok {
		t.Fatal("a paused binding is due next")
	}
	r, err := store.ResumeTrigger(e.ctx, e.ts, "a")
	if err != nil || r.State != store.TriggerActive || !sameTime(r.NextFire, now) {
		t.Fatalf("resume: %v %+v", err, r)
	}
	c, _ := e.claim("n", longTTL, 10)
	if len(c) != 1 {
		t.Fatalf("claimed %v after resume", triggerIDs(c))
	}
	removed, err := e.ts.TriggerRemove(e.ctx, "a")
	if err != nil || !removed {
		t.Fatalf("remove: %v %v", removed, err)
	}
	if removed, err := e.ts.TriggerRemove(e.ctx, "a"); err != nil || removed {
		t.Fatalf("remove twice: %v %v", removed, err)
	}
	_, err = e.ts.TriggerRetire(e.ctx, retireOf(c[0], now.Add(time.Hour)))
	wantErr(t, "retire a removed binding", err, store.ErrTriggerNotFound)
	_, err = store.PauseTrigger(e.ctx, e.ts, "a")
	wantErr(t, "pause a removed binding", err, store.ErrTriggerNotFound)
	_, err = store.ResumeTrigger(e.ctx, e.ts, "a")
	wantErr(t, "resume a removed binding", err, store.ErrTriggerNotFound)
}

func testTriggerBound(t *testing.T, e *trigEnv) {
	now := e.now()
	mk := func(id, session string) error {
		_, _, err := e.ts.TriggerCreate(e.ctx, store.TriggerCreateParams{ID: id, SessionID: session, Spec: spec(id),
			NextFire: now, MaxPerSession: 2})
		return err
	}
	if err := errors.Join(mk("a", "s"), mk("b", "s"), mk("c", "other")); err != nil {
		t.Fatal(err)
	}
	var limit *store.TriggerLimitError
	if err := mk("d", "s"); !errors.As(err, &limit) || limit.SessionID != "s" || limit.Limit != 2 {
		t.Fatalf("a third binding of a session bounded at 2: %v", err)
	}
	// An existing id is not a new binding.
	if err := mk("a", "s"); err != nil {
		t.Fatalf("the same id again: %v", err)
	}
	// A done binding no longer counts.
	c, _ := e.claim("n", longTTL, 10)
	for _, tr := range c {
		if tr.ID == "a" {
			if _, err := e.ts.TriggerRetire(e.ctx, retireOf(tr, time.Time{})); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := mk("d", "s"); err != nil {
		t.Fatalf("a binding in place of a done one: %v", err)
	}
	// Concurrent creates cannot both pass the bound.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = mk(fmt.Sprintf("c%d", i), "race") })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else if !errors.As(err, &limit) {
			t.Fatalf("concurrent create: %v", err)
		}
	}
	if ok != 2 {
		t.Fatalf("%d concurrent creates passed a bound of 2", ok)
	}
}

func testTriggerConcurrent(t *testing.T, e *trigEnv) {
	now := e.now()
	const n = 60
	for i := range n {
		e.create(fmt.Sprintf("t%02d", i), now.Add(-time.Duration(i)*time.Second))
	}
	var (
		mu   sync.Mutex
		seen = map[string]string{}
		wg   sync.WaitGroup
	)
	for w := range 6 {
		wg.Go(func() {
			owner := fmt.Sprintf("n%d", w)
			for {
				got, _, err := e.ts.TriggerClaim(e.ctx, store.TriggerClaimParams{Owner: owner, TTL: longTTL, Limit: 4})
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, tr := range got {
					if by, dup := seen[tr.ID]; dup {
						t.Errorf("%s claimed by %s and %s", tr.ID, by, owner)
					}
					seen[tr.ID] = owner
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("claimed %d of %d", len(seen), n)
	}
}

func testTriggerBadInput(t *testing.T, e *trigEnv) {
	now := e.now()
	for _, c := range []struct {
		name string
		p    store.TriggerCreateParams
	}{
		{"no id", store.TriggerCreateParams{Spec: spec("x"), NextFire: now}},
		{"bad spec", store.TriggerCreateParams{ID: "x", Spec: json.RawMessage(`{`), NextFire: now}},
		{"no next fire", store.TriggerCreateParams{ID: "x", Spec: spec("x")}},
		{"long id", store.TriggerCreateParams{ID: string(make([]byte, store.MaxNameBytes+1)), Spec: spec("x"), NextFire: now}},
	} {
		if _, _, err := e.ts.TriggerCreate(e.ctx, c.p); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	for _, p := range []store.TriggerClaimParams{{TTL: time.Second}, {Owner: "n"}, {Owner: "n", TTL: time.Second, Limit: store.MaxTriggerPage + 1}} {
		if _, _, err := e.ts.TriggerClaim(e.ctx, p); err == nil {
			t.Errorf("claim %+v: accepted", p)
		}
	}
	if _, err := e.ts.TriggerGet(e.ctx, "x"); !errors.Is(err, store.ErrTriggerNotFound) {
		t.Fatalf("a refused create wrote something: %v", err)
	}
}
