package storetest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/testproc"
	"github.com/hitch-dev/hitch/store"
)

// The durable-commit check's bounds: how many writers the child runs, how
// many answers the parent waits for before it kills the child, and how
// long it waits for them at the most.
const (
	durableWriters = 4
	durableAnswers = 400
	durableWait    = 8 * time.Second
	// durableMax bounds one child writer's appends, should the kill never
	// come.
	durableMax = 100_000
)

// durableEnv names the store a re-executed test binary is to write to:
// its presence makes RunDurable the child.
const durableEnv = "HITCH_STORETEST_DURABLE"

// RunDurable checks that a store answers a write only once it is
// durable. It re-executes the test binary running the calling test: in
// that child, writers append to runs' journals (and admit session
// messages, when the store keeps sessions) concurrently, one entry a call,
// printing every position the store answered. The parent SIGKILLs the
// child part-way, opens the store again, and checks that every answered
// position is there with the data written, and each journal whole.
//
// fresh returns the location of a new, empty store, in the parent; open
// opens the store at a location, in either process (it may call t.Cleanup
// to close it). The calling test must be a top-level test that does
// nothing before RunDurable that cannot be done twice.
func RunDurable(t *testing.T, fresh func(t *testing.T) string, open func(t *testing.T, loc string) store.Store) {
	if loc, ok := os.LookupEnv(durableEnv); ok {
		durableChild(t, open(t, loc))
		return
	}
	loc := fresh(t)
	answered := killDurableChild(t, loc)
	if len(answered) == 0 {
		t.Fatal("the child answered no write before it was killed")
	}
	s := open(t, loc)
	ctx := t.Context()
	for id, last := range answered {
		if sess, ok := strings.CutPrefix(id, "session:"); ok {
			checkSessionDurable(t, ctx, s, sess, last)
			continue
		}
		run, err := s.RunGet(ctx, id)
		if err != nil {
			t.Fatalf("run %s, answered up to position %d: %v", id, last, err)
		}
		if run.Position < last {
			t.Fatalf("run %s: journal length %d after the kill, but position %d was answered", id, run.Position, last)
		}
		var got []store.Entry
		for after := int64(0); after < run.Position; after = got[len(got)-1].Pos {
			page, err := s.JournalRead(ctx, store.JournalReadParams{RunID: id, After: after})
			if err != nil {
				t.Fatalf("run %s: read after %d: %v", id, after, err)
			}
			if len(page) == 0 {
				t.Fatalf("run %s: nothing after position %d of %d", id, after, run.Position)
			}
			got = append(got, page...)
		}
		for i, e := range got {
			if want := durableData(int64(i) + 1); e.Pos != int64(i)+1 || string(e.Data) != want {
				t.Fatalf("run %s: position %d holds %d %s, want %d %s", id, i+1, e.Pos, e.Data, i+1, want)
			}
		}
	}
	t.Logf("%d journals, every answered write kept after SIGKILL", len(answered))
}

func checkSessionDurable(t *testing.T, ctx context.Context, s store.Store, id string, last int64) {
	t.Helper()
	ss, ok := s.(store.SessionStore)
	if !ok {
		t.Fatalf("session %s answered, but the reopened store keeps no sessions", id)
	}
	sess, err := ss.SessionGet(ctx, id)
	if err != nil {
		t.Fatalf("session %s, answered up to position %d: %v", id, last, err)
	}
	if sess.Position < last {
		t.Fatalf("session %s: journal length %d after the kill, but position %d was answered", id, sess.Position, last)
	}
	msgs, err := ss.SessionMessages(ctx, store.SessionMessagesParams{SessionID: id, All: true, Limit: store.MaxListLimit})
	if err != nil {
		t.Fatalf("session %s: messages: %v", id, err)
	}
	if int64(len(msgs)) < min(last, store.MaxListLimit) {
		t.Fatalf("session %s: %d messages after the kill, but %d admissions were answered", id, len(msgs), last)
	}
	for i, m := range msgs {
		if want := "m" + strconv.Itoa(i+1); m.ID != want || m.Pos != int64(i)+1 || m.State != hitchtype.StateQueued {
			t.Fatalf("session %s: message %d is %+v, want %s queued at %d", id, i+1, m, want, i+1)
		}
	}
}

// durableData is the data of the entry at position pos.
func durableData(pos int64) string { return `{"pos":` + strconv.FormatInt(pos, 10) + `}` }

// killDurableChild runs the child until it has answered durableAnswers
// writes (or durableWait has passed), SIGKILLs it, and returns the last
// position answered in each journal ("session:" and the id for a
// session's).
func killDurableChild(t *testing.T, loc string) map[string]int64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1")
	testproc.DieWithParent(cmd)
	cmd.Env = append(os.Environ(), durableEnv+"="+loc)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		answered = map[string]int64{}
		enough   = make(chan struct{})
		lines    = make(chan struct{})
	)
	go func() {
		defer close(lines)
		n := 0
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 || f[0] != "durable:" {
				continue
			}
			pos, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				continue
			}
			mu.Lock()
			answered[f[1]] = max(answered[f[1]], pos)
			mu.Unlock()
			if n++; n == durableAnswers {
				close(enough)
			}
		}
	}()
	timer := time.NewTimer(durableWait)
	defer timer.Stop()
	select {
	case <-enough:
	case <-lines:
		t.Fatal("the child ended before it was killed")
	case <-timer.C:
	}
	// Answers printed before the kill are read to the end of the pipe.
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatalf("kill the child: %v", err)
	}
	<-lines
	_ = cmd.Wait()
	mu.Lock()
	defer mu.Unlock()
	return answered
}

// durableChild writes until it is killed, printing what the store
// answered.
func durableChild(t *testing.T, s store.Store) {
	ctx := context.Background()
	var (
		wg  sync.WaitGroup
		out sync.Mutex
	)
	answer := func(id string, pos int64) {
		out.Lock()
		defer out.Unlock()
		fmt.Fprintf(os.Stdout, "durable: %s %d\n", id, pos)
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "durable child: "+format+"\n", args...)
		os.Exit(2)
	}
	for w := range durableWriters {
		wg.Go(func() {
			id := "durable-" + strconv.Itoa(w)
			_, _, err := s.RunCreate(ctx, store.RunCreateParams{ID: id, Agent: "a",
				Entries: []store.EntryInput{{Kind: "k", Data: json.RawMessage(durableData(1))}}})
			if err != nil {
				fail("create %s: %v", id, err)
			}
			answer(id, 1)
			runs, err := s.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "durable", RunID: id, TTL: time.Hour})
			if err != nil || len(runs) != 1 {
				fail("claim %s: %v (%d runs)", id, err, len(runs))
			}
			token := runs[0].Token
			for pos := int64(2); pos <= durableMax; pos++ {
				if _, err := s.JournalAppend(ctx, store.JournalAppendParams{RunID: id, Token: token, After: pos - 1,
					Entries: []store.EntryInput{{Kind: "k", Data: json.RawMessage(durableData(pos))}}}); err != nil {
					fail("append %s at %d: %v", id, pos, err)
				}
				answer(id, pos)
			}
		})
	}
	if ss, ok := s.(store.SessionStore); ok {
		wg.Go(func() {
			if _, _, err := ss.SessionCreate(ctx, store.SessionCreateParams{ID: "durable", Agent: "a"}); err != nil {
				fail("session create: %v", err)
			}
			for pos := int64(1); pos <= durableMax; pos++ {
				data, _ := json.Marshal(hitchtype.MessageAdmitted{ID: "m" + strconv.FormatInt(pos, 10), Mode: hitchtype.ModeQueue, Text: "t"})
				res, err := ss.SessionAppend(ctx, store.SessionAppendParams{SessionID: "durable", After: pos - 1,
					Kind: hitchtype.KindMessageAdmitted, Data: data})
				if err != nil {
					fail("session append at %d: %v", pos, err)
				}
				answer("session:durable", res.Entry.Pos)
			}
		})
	}
	wg.Wait()
	// The parent kills the child long before the writers are done; should
	// it not, the parent's check fails on the child's end.
	t.Fatal("the durable child wrote its bound without being killed")
}
