package postgres_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/pgtest"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/postgres"
)

// wakeWait bounds a wait for a wake that must come.
const wakeWait = 10 * time.Second

func awaitWake(t *testing.T, w <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-w:
	case <-time.After(wakeWait):
		t.Fatalf("no wake within %v after %s", wakeWait, what)
	}
}

// TestWakeOnNotify checks that a listening store is woken by each change
// that makes work due, well before its (hour-long) poll would.
func TestWakeOnNotify(t *testing.T) {
	t.Parallel()
	ctx, schema := t.Context(), newSchema(t)
	node := openIn(t, schema, postgres.WithPollInterval(time.Hour))
	defer node.Close()
	other := openIn(t, schema) // another node makes the changes
	defer other.Close()
	w := node.Wake()
	if node.Wake() != w {
		t.Fatal("Wake returned another channel on the second call")
	}
	awaitWake(t, w, "the listener connected")

	if _, _, err := other.RunCreate(ctx, store.RunCreateParams{ID: "r", Agent: "a", Entries: entry()}); err != nil {
		t.Fatal(err)
	}
	awaitWake(t, w, "a run was created")

	ls, err := other.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "o", TTL: time.Hour, RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.JournalAppend(ctx, store.JournalAppendParams{RunID: "r", Token: ls[0].Token, After: 1,
		Entries: entry(), Status: hitchtype.StatusWaiting}); err != nil {
		t.Fatal(err)
	}
	// Waiting without a wake time is not due: no notification. The cancel
	// request below makes it due.
	if _, err := other.RunRequestCancel(ctx, store.RunRequestCancelParams{ID: "r"}); err != nil {
		t.Fatal(err)
	}
	awaitWake(t, w, "a waiting run was asked to cancel")

	ls, err = other.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "o", TTL: time.Hour, RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.JournalAppend(ctx, store.JournalAppendParams{RunID: "r", Token: ls[0].Token, After: 2,
		Entries: entry(), Status: hitchtype.StatusQueued}); err != nil {
		t.Fatal(err)
	}
	awaitWake(t, w, "a run was yielded")

	ls, err = other.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "o", TTL: time.Hour, Limit: 1})
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim: %v %v", err, ls)
	}
	if _, err := other.LeaseRelease(ctx, store.LeaseReleaseParams{RunID: "r", Owner: "o", Token: ls[0].Token}); err != nil {
		t.Fatal(err)
	}
	awaitWake(t, w, "a lease was released")

	// A listener whose connection dies reconnects, wakes (what was sent
	// meanwhile is lost) and hears the next change.
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var killed int
	if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1`, "hitch wake "+schema).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminate the listener: %v, %d backends", err, killed)
	}
	awaitWake(t, w, "the listener reconnected")
	if _, _, err := other.RunCreate(ctx, store.RunCreateParams{ID: "r2", Agent: "a", Entries: entry()}); err != nil {
		t.Fatal(err)
	}
	awaitWake(t, w, "a run was created after the reconnect")
}

// TestWakePollOnly checks the fallback: with WithPollOnly, no listener, and
// wakes come from the poll alone.
func TestWakePollOnly(t *testing.T) {
	t.Parallel()
	s := open(t, postgres.WithPollOnly(true), postgres.WithPollInterval(5*time.Millisecond))
	w := s.Wake()
	for i := range 3 {
		awaitWake(t, w, "poll "+string(rune('1'+i)))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
