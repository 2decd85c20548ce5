package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

func testLeaseRelease(t *testing.T, open opener) {
	t.Run("ClaimedAtOnce", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		a := e.createClaimed("r", "A", longTTL)
		run, err := e.s.LeaseRelease(e.ctx, store.LeaseReleaseParams{RunID: "r", Owner: "A", Token: a.Token})
		if err != nil {
			t.Fatalf("release: %v", err)
		}
		for _, got := range []store.Run{run, e.get("r")} {
			if got.Status != hitchtype.StatusRunning || got.LeaseOwner != "" || !got.LeaseExpires.IsZero() ||
				got.LeaseToken != a.Token || got.Position != 1 {
				t.Fatalf("released run: %+v", got)
			}
		}
		// The released lease can write no more.
		_, err = e.s.JournalAppend(e.ctx, store.JournalAppendParams{RunID: "r", Token: a.Token, After: 1,
			Entries: entries("late", 1)})
		wantErr(t, "append under a released lease", err, store.ErrFenced)
		_, err = e.s.LeaseRenew(e.ctx, store.LeaseRenewParams{RunID: "r", Owner: "A", Token: a.Token, TTL: longTTL})
		wantErr(t, "renew of a released lease", err, store.ErrFenced)

		// Due at once: no clock moves, no TTL runs out.
		ls, err := e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "B", TTL: longTTL, Limit: 10})
		if err != nil || len(ls) != 1 || ls[0].Run.ID != "r" {
			t.Fatalf("claim after the release: %v %v, want r", err, leaseIDs(ls))
		}
		b := ls[0]
		if b.Token <= a.Token || b.Run.LeaseOwner != "B" {
			t.Fatalf("claim after the release: token %d (was %d), owner %q", b.Token, a.Token, b.Run.LeaseOwner)
		}

		// A stale release is refused and changes nothing.
		before := e.get("r")
		_, err = e.s.LeaseRelease(e.ctx, store.LeaseReleaseParams{RunID: "r", Owner: "A", Token: a.Token})
		wantErr(t, "stale release", err, store.ErrFenced)
		e.unchanged(before)
		e.append(b, store.JournalAppendParams{After: 1, Entries: entries("B", 1)})
	})

	t.Run("Twice", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		l := e.createClaimed("r", "A", longTTL)
		p := store.LeaseReleaseParams{RunID: "r", Owner: "A", Token: l.Token}
		if _, err := e.s.LeaseRelease(e.ctx, p); err != nil {
			t.Fatalf("release: %v", err)
		}
		before := e.get("r")
		run, err := e.s.LeaseRelease(e.ctx, p)
		if err != nil {
			t.Fatalf("second release: %v", err)
		}
		if run.ID != "r" || run.LeaseOwner != "" || run.LeaseToken != l.Token || run.Status != hitchtype.StatusRunning {
			t.Fatalf("second release returned %+v", run)
		}
		e.unchanged(before)
	})

	t.Run("WaitingKeepsWakeAt", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		l := e.createClaimed("r", "A", longTTL)
		wake := e.now().Add(time.Hour)
		e.append(l, store.JournalAppendParams{After: 1, Entries: entries("w", 1), Status: hitchtype.StatusWaiting, WakeAt: wake})
		run, err := e.s.LeaseRelease(e.ctx, store.LeaseReleaseParams{RunID: "r", Owner: "A", Token: l.Token})
		if err != nil {
			t.Fatalf("release of a waiting run: %v", err)
		}
		if run.Status != hitchtype.StatusWaiting || !sameTime(run.WakeAt, wake) || run.LeaseOwner != "" {
			t.Fatalf("release of a waiting run: %+v (want wake %v)", run, wake)
		}
		ls, err := e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "B", TTL: longTTL, Limit: 10})
		if err != nil || len(ls) != 0 {
			t.Fatalf("claim: %v %v, want nothing due before the wake time", err, leaseIDs(ls))
		}
	})

	t.Run("Errors", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		l := e.createClaimed("r", "A", longTTL)
		before := e.get("r")
		for _, tc := range []struct {
			name string
			p    store.LeaseReleaseParams
			want error
		}{
			{"other owner", store.LeaseReleaseParams{RunID: "r", Owner: "B", Token: l.Token}, store.ErrFenced},
			{"old token", store.LeaseReleaseParams{RunID: "r", Owner: "A", Token: l.Token - 1}, store.ErrFenced},
			{"future token", store.LeaseReleaseParams{RunID: "r", Owner: "A", Token: l.Token + 1}, store.ErrFenced},
			{"missing run", store.LeaseReleaseParams{RunID: "nope", Owner: "A", Token: 1}, store.ErrNotFound},
		} {
			_, err := e.s.LeaseRelease(e.ctx, tc.p)
			wantErr(t, tc.name, err, tc.want)
			e.unchanged(before)
		}
		if _, err := e.s.LeaseRelease(e.ctx, store.LeaseReleaseParams{RunID: "r", Token: l.Token}); err == nil {
			t.Fatal("release without an owner succeeded")
		}
		e.unchanged(before)

		e.append(l, store.JournalAppendParams{After: 1, Entries: entries("end", 1), Status: hitchtype.StatusCompleted,
			Outcome: json.RawMessage(`"done"`)})
		_, err := e.s.LeaseRelease(e.ctx, store.LeaseReleaseParams{RunID: "r", Owner: "A", Token: l.Token})
		wantErr(t, "release of an ended run", err, store.ErrEnded)
	})
}
