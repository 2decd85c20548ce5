package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// testSessions checks store.SessionStore on drivers that implement it.
func testSessions(t *testing.T, open opener) {
	runCases(t, open, func(t *testing.T, e *env) *sessEnv {
		return &sessEnv{env: e, ss: face[store.SessionStore](t, e.s, "store.SessionStore")}
	}, []testCase[*sessEnv]{
		{"CreateIdempotent", testSessionCreate},
		{"AdmitOrderAndRead", testSessionAdmit},
		{"ConditionalAppend", testSessionConditional},
		{"IdempotencyKey", testSessionKey},
		{"EditRemoveOnlyQueued", testSessionEditRemove},
		{"StartOneAtATime", testSessionStart},
		{"StartOrder", testSessionStartOrder},
		{"StartConcurrent", testSessionStartConcurrent},
		{"EndOnce", testSessionEnd},
		{"ListAndNeedsWork", testSessionList},
		{"BadInput", testSessionBadInput},
	})
}

type sessEnv struct {
	*env
	ss store.SessionStore
}

func (e *sessEnv) session(id string) store.Session {
	e.t.Helper()
	s, created, err := e.ss.SessionCreate(e.ctx, store.SessionCreateParams{ID: id, Agent: "agent", Version: 1})
	if err != nil || !created {
		e.t.Fatalf("session create %q: created=%v, %v", id, created, err)
	}
	return s
}

func msgData(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func (e *sessEnv) admit(sid, mid string, mode hitchtype.SendMode) store.SessionAppendResult {
	e.t.Helper()
	res, err := e.ss.SessionAppend(e.ctx, store.SessionAppendParams{SessionID: sid, After: store.AnyPosition,
		Kind: hitchtype.KindMessageAdmitted, Data: msgData(hitchtype.MessageAdmitted{ID: mid, Mode: mode, Text: "text of " + mid})})
	if err != nil {
		e.t.Fatalf("admit %s/%s: %v", sid, mid, err)
	}
	return res
}

func (e *sessEnv) startParams(sid string, m store.SessionMessage) store.SessionStartParams {
	runID := "run-" + sid + "-" + m.ID
	return store.SessionStartParams{SessionID: sid, MessageID: m.ID, MessageVersion: m.Version,
		Run:  store.RunCreateParams{ID: runID, Agent: "agent", Version: 1, Entries: entries(runID, 1)},
		Data: msgData(hitchtype.SubmissionStarted{MessageID: m.ID, RunID: runID, Text: m.Text})}
}

func (e *sessEnv) queued(sid string) []store.SessionMessage {
	e.t.Helper()
	ms, err := e.ss.SessionMessages(e.ctx, store.SessionMessagesParams{SessionID: sid})
	if err != nil {
		e.t.Fatalf("session messages %q: %v", sid, err)
	}
	return ms
}

func (e *sessEnv) startNext(sid string) store.Run {
	e.t.Helper()
	ms := e.queued(sid)
	if len(ms) == 0 {
		e.t.Fatalf("session %s has nothing queued", sid)
	}
	_, run, err := e.ss.SessionStart(e.ctx, e.startParams(sid, ms[0]))
	if err != nil {
		e.t.Fatalf("session start %q: %v", sid, err)
	}
	return run
}

func (e *sessEnv) readKinds(sid string) []string {
	e.t.Helper()
	es, err := e.ss.SessionRead(e.ctx, store.SessionReadParams{SessionID: sid})
	if err != nil {
		e.t.Fatalf("session read %q: %v", sid, err)
	}
	out := make([]string, len(es))
	for i, x := range es {
		if x.Pos != int64(i+1) {
			e.t.Fatalf("entry %d has position %d", i, x.Pos)
		}
		out[i] = x.Kind
	}
	return out
}

func testSessionCreate(t *testing.T, e *sessEnv) {
	s, created, err := e.ss.SessionCreate(e.ctx, store.SessionCreateParams{ID: "s", Agent: "chat", Version: 2,
		Metadata: json.RawMessage(`{"user":"ann"}`)})
	if err != nil || !created {
		t.Fatalf("create: created=%v err=%v", created, err)
	}
	if s.ID != "s" || s.Agent != "chat" || s.Version != 2 || !sameJSON(s.Metadata, json.RawMessage(`{"user":"ann"}`)) ||
		s.ActiveRun != "" || s.Position != 0 || s.Queued != 0 || s.CreatedAt.IsZero() {
		t.Fatalf("created session = %+v", s)
	}
	again, created, err := e.ss.SessionCreate(e.ctx, store.SessionCreateParams{ID: "s", Agent: "other", Version: 9})
	if err != nil || created || again.Agent != "chat" || again.Version != 2 {
		t.Fatalf("create again: created=%v err=%v session=%+v, want the first one unchanged", created, err, again)
	}
	got, err := e.ss.SessionGet(e.ctx, "s")
	if err != nil || got.ID != "s" || !sameTime(got.CreatedAt, s.CreatedAt) {
		t.Fatalf("get: %+v %v", got, err)
	}
	_, err = e.ss.SessionGet(e.ctx, "nope")
	wantErr(t, "get missing", err, store.ErrSessionNotFound)
	plain := e.session("plain")
	if !sameJSON(plain.Metadata, json.RawMessage(`{}`)) {
		t.Fatalf("metadata of a session created without = %s, want {}", plain.Metadata)
	}
}

func testSessionAdmit(t *testing.T, e *sessEnv) {
	e.session("s")
	for i := range 5 {
		res := e.admit("s", fmt.Sprintf("m%d", i), hitchtype.ModeQueue)
		if res.Duplicate || res.Entry.Pos != int64(i+1) || res.Session.Position != int64(i+1) || res.Session.Queued != i+1 {
			t.Fatalf("admission %d: %+v", i, res)
		}
	}
	es, err := e.ss.SessionRead(e.ctx, store.SessionReadParams{SessionID: "s", After: 2, Limit: 2})
	if err != nil || len(es) != 2 || es[0].Pos != 3 || es[1].Pos != 4 || es[0].Kind != hitchtype.KindMessageAdmitted {
		t.Fatalf("read after 2, limit 2: %+v %v", es, err)
	}
	var a hitchtype.MessageAdmitted
	if err := json.Unmarshal(es[0].Data, &a); err != nil || a.ID != "m2" || a.Text != "text of m2" {
		t.Fatalf("entry 3 data %s: %v", es[0].Data, err)
	}
	ms := e.queued("s")
	if len(ms) != 5 {
		t.Fatalf("queued = %d, want 5", len(ms))
	}
	for i, m := range ms {
		if m.ID != fmt.Sprintf("m%d", i) || m.Pos != int64(i+1) || m.State != hitchtype.StateQueued || m.Mode != hitchtype.ModeQueue {
			t.Fatalf("queued[%d] = %+v", i, m)
		}
	}
	_, err = e.ss.SessionRead(e.ctx, store.SessionReadParams{SessionID: "nope"})
	wantErr(t, "read missing", err, store.ErrSessionNotFound)
	empty := e.session("empty")
	if es, err := e.ss.SessionRead(e.ctx, store.SessionReadParams{SessionID: empty.ID}); err != nil || len(es) != 0 {
		t.Fatalf("read empty: %v %v", es, err)
	}
	// A taken message id is refused.
	_, err = e.ss.SessionAppend(e.ctx, store.SessionAppendParams{SessionID: "s", After: store.AnyPosition,
		Kind: hitchtype.KindMessageAdmitted, Data: msgData(hitchtype.MessageAdmitted{ID: "m0", Mode: hitchtype.ModeQueue, Text: "x"})})
	wantErr(t, "admit a taken id", err, store.ErrConflict)
}

func testSessionConditional(t *testing.T, e *sessEnv) {
	e.session("s")
	e.admit("s", "a", hitchtype.ModeQueue)
	edit := func(after int64) error {
		_, err := e.ss.SessionAppend(e.ctx, store.SessionAppendParams{SessionID: "s", After: after,
			Kind: hitchtype.KindMessageEdited, Data: msgData(hitchtype.MessageEdited{ID: "a", Text: "new"})})
		return err
	}
	wantErr(t, "append at a stale position", edit(0), store.ErrConflict)
	wantErr(t, "append past the end", edit(5), store.ErrConflict)
	if err := edit(1); err != nil {
		t.Fatalf("append at the length: %v", err)
	}
	if got := e.queued("s")[0]; got.Text != "new" || got.Version != 2 {
		t.Fatalf("edited message = %+v", got)
	}
}

func testSessionKey(t *testing.T, e *sessEnv) {
	e.session("s")
	e.session("t")
	send := func(sid, mid, key string, ttl time.Duration) store.SessionAppendResult {
		t.Helper()
		res, err := e.ss.SessionAppend(e.ctx, store.SessionAppendParams{SessionID: sid, After: store.AnyPosition,
			Kind: hitchtype.KindMessageAdmitted, IdempotencyKey: key, KeyTTL: ttl,
			Data: msgData(hitchtype.MessageAdmitted{ID: mid, IdempotencyKey: key, Mode: hitchtype.ModeQueue, Text: mid})})
		if err != nil {
			t.Fatalf("send %s with key %s: %v", mid, key, err)
		}
		return res
	}
	first := send("s", "m1", "k", time.Hour)
	dup := send("s", "m2", "k", time.Hour)
	if !dup.Duplicate || dup.Entry.Pos != first.Entry.Pos || !sameJSON(dup.Entry.Data, first.Entry.Data) {
		t.Fatalf("same key again: %+v, want the first admission %+v", dup, first)
	}
	if got := e.readKinds("s"); len(got) != 1 {
		t.Fatalf("journal after a duplicate: %v, want one entry", got)
	}
	// Keys are per session.
	if other := send("t", "m1", "k", time.Hour); other.Duplicate {
		t.Fatal("a key of another session was taken for a duplicate")
	}
	// Past its expiry, the key is forgotten.
	short := send("s", "m3", "short", time.Millisecond)
	e.waitPast(short.Entry.At.Add(time.Millisecond))
	if again := send("s", "m4", "short", time.Hour); again.Duplicate || again.Entry.Pos == short.Entry.Pos {
		t.Fatalf("an expired key still deduplicated: %+v", again)
	}
	// A duplicate is judged before the message id: the same key with the
	// id of the first admission is a duplicate, not a conflict.
	if d := send("s", "m1", "k", time.Hour); !d.Duplicate {
		t.Fatal("a retried send (same key, same id) was not a duplicate")
	}
}

func testSessionEditRemove(t *testing.T, e *sessEnv) {
	e.session("s")
	e.admit("s", "a", hitchtype.ModeQueue)
	e.admit("s", "b", hitchtype.ModeQueue)
	e.admit("s", "c", hitchtype.ModeQueue)
	run := e.startNext("s") // a starts
	app := func(kind string, v any) error {
		_, err := e.ss.SessionAppend(e.ctx, store.SessionAppendParams{SessionID: "s", After: store.AnyPosition, Kind: kind, Data: msgData(v)})
		return err
	}
	var mse *store.MessageStateError
	err := app(hitchtype.KindMessageEdited, hitchtype.MessageEdited{ID: "a", Text: "too late"})
	if !errors.As(err, &mse) || mse.State != hitchtype.StateStarted || mse.RunID != run.ID {
		t.Fatalf("edit a started message: %v, want a MessageStateError naming the run", err)
	}
	if err := app(hitchtype.KindMessageRemoved, hitchtype.MessageRemoved{ID: "a"}); !errors.As(err, &mse) {
		t.Fatalf("remove a started message: %v", err)
	}
	if err := app(hitchtype.KindMessageEdited, hitchtype.MessageEdited{ID: "b", Text: "b2"}); err != nil {
		t.Fatal(err)
	}
	if err := app(hitchtype.KindMessageRemoved, hitchtype.MessageRemoved{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := app(hitchtype.KindMessageRemoved, hitchtype.MessageRemoved{ID: "c"}); !errors.As(err, &mse) || mse.State != hitchtype.StateRemoved {
		t.Fatalf("remove twice: %v", err)
	}
	if err := app(hitchtype.KindMessageEdited, hitchtype.MessageEdited{ID: "zz", Text: "x"}); !errors.Is(err, store.ErrMessageNotFound) {
		t.Fatalf("edit an unknown message: %v", err)
	}
	if err := app(hitchtype.KindMessageJoined, hitchtype.MessageJoined{ID: "b", RunID: run.ID}); err != nil {
		t.Fatal(err)
	}
	s, _ := e.ss.SessionGet(e.ctx, "s")
	if s.Queued != 0 {
		t.Fatalf("queued = %d after start, remove and join, want 0", s.Queued)
	}
	all, err := e.ss.SessionMessages(e.ctx, store.SessionMessagesParams{SessionID: "s", All: true})
	if err != nil || len(all) != 3 {
		t.Fatalf("all messages: %v %v", all, err)
	}
	want := []hitchtype.MessageState{hitchtype.StateStarted, hitchtype.StateJoined, hitchtype.StateRemoved}
	for i, m := range all {
		if m.State != want[i] {
			t.Fatalf("message %s is %s, want %s", m.ID, m.State, want[i])
		}
	}
	if all[1].Text != "b2" || all[1].RunID != run.ID {
		t.Fatalf("b = %+v", all[1])
	}
}

func testSessionStart(t *testing.T, e *sessEnv) {
	e.session("s")
	e.admit("s", "a", hitchtype.ModeQueue)
	e.admit("s", "b", hitchtype.ModeQueue)
	ms := e.queued("s")
	sess, run, err := e.ss.SessionStart(e.ctx, e.startParams("s", ms[0]))
	if err != nil {
		t.Fatal(err)
	}
	if sess.ActiveRun != run.ID || run.Status != hitchtype.StatusQueued || sess.Queued != 1 || sess.Position != 3 {
		t.Fatalf("after start: session %+v run %+v", sess, run)
	}
	if got := e.read(run.ID, 0, 0); len(got) != 1 {
		t.Fatalf("the run's first entries: %v", got)
	}
	var busy *store.SessionBusyError
	_, _, err = e.ss.SessionStart(e.ctx, e.startParams("s", ms[1]))
	if !errors.As(err, &busy) || busy.ActiveRun != run.ID {
		t.Fatalf("start while active: %v, want SessionBusyError", err)
	}
	if _, err := e.s.RunGet(e.ctx, "run-s-b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused start created its run: %v", err)
	}
	if k := e.readKinds("s"); k[2] != hitchtype.KindSubmissionStarted || len(k) != 3 {
		t.Fatalf("kinds %v", k)
	}
}

func testSessionStartOrder(t *testing.T, e *sessEnv) {
	e.session("s")
	e.admit("s", "q1", hitchtype.ModeQueue)
	e.admit("s", "s1", hitchtype.ModeSteer)
	e.admit("s", "i1", hitchtype.ModeInterrupt)
	e.admit("s", "q2", hitchtype.ModeQueue)
	e.admit("s", "i2", hitchtype.ModeInterrupt)
	ms := e.queued("s")
	order := ""
	for _, m := range ms {
		order += m.ID + " "
	}
	if order != "i1 i2 q1 s1 q2 " {
		t.Fatalf("start order = %q, want interrupts first, then by admission", order)
	}
	// Starting any but the next is refused.
	_, _, err := e.ss.SessionStart(e.ctx, e.startParams("s", ms[2]))
	wantErr(t, "start out of order", err, store.ErrConflict)
	// A stale version (the text changed since it was read) is refused.
	if _, err := e.ss.SessionAppend(e.ctx, store.SessionAppendParams{SessionID: "s", After: store.AnyPosition,
		Kind: hitchtype.KindMessageEdited, Data: msgData(hitchtype.MessageEdited{ID: "i1", Text: "edited"})}); err != nil {
		t.Fatal(err)
	}
	_, _, err = e.ss.SessionStart(e.ctx, e.startParams("s", ms[0]))
	wantErr(t, "start with a stale version", err, store.ErrConflict)
	run := e.startNext("s")
	es := e.read(run.ID, 0, 0)
	if len(es) != 1 {
		t.Fatal("run not created")
	}
}

func testSessionStartConcurrent(t *testing.T, e *sessEnv) {
	const sessions, callers = 4, 8
	for i := range sessions {
		sid := fmt.Sprintf("s%d", i)
		e.session(sid)
		e.admit(sid, "a", hitchtype.ModeQueue)
		e.admit(sid, "b", hitchtype.ModeQueue)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	started := map[string][]string{}
	for i := range sessions * callers {
		sid := fmt.Sprintf("s%d", i%sessions)
		wg.Go(func() {
			ms, err := e.ss.SessionMessages(e.ctx, store.SessionMessagesParams{SessionID: sid})
			if err != nil || len(ms) == 0 {
				return
			}
			p := e.startParams(sid, ms[0])
			p.Run.ID = fmt.Sprintf("%s-%d", p.Run.ID, i) // every caller names its own run
			_, run, err := e.ss.SessionStart(e.ctx, p)
			if err == nil {
				mu.Lock()
				started[sid] = append(started[sid], run.ID)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for i := range sessions {
		sid := fmt.Sprintf("s%d", i)
		if len(started[sid]) != 1 {
			t.Fatalf("session %s: %d callers started a submission (%v), want exactly 1", sid, len(started[sid]), started[sid])
		}
		s, _ := e.ss.SessionGet(e.ctx, sid)
		if s.ActiveRun != started[sid][0] || s.Queued != 1 {
			t.Fatalf("session %s = %+v, want active %s and one queued", sid, s, started[sid][0])
		}
	}
}

func testSessionEnd(t *testing.T, e *sessEnv) {
	e.session("s")
	e.admit("s", "a", hitchtype.ModeQueue)
	run := e.startNext("s")
	e.admit("s", "steer", hitchtype.ModeSteer)
	data := msgData(hitchtype.SubmissionEnded{MessageID: "a", RunID: run.ID, Outcome: hitchtype.SubmissionCompleted})
	_, ended, err := e.ss.SessionEnd(e.ctx, store.SessionEndParams{SessionID: "s", RunID: "other", Data: data})
	if err != nil || ended {
		t.Fatalf("end by a run that is not active: ended=%v %v", ended, err)
	}
	s, ended, err := e.ss.SessionEnd(e.ctx, store.SessionEndParams{SessionID: "s", RunID: run.ID, Joined: []string{"steer"}, Data: data})
	if err != nil || !ended || s.ActiveRun != "" || s.Queued != 0 {
		t.Fatalf("end: ended=%v err=%v session=%+v", ended, err, s)
	}
	_, ended, err = e.ss.SessionEnd(e.ctx, store.SessionEndParams{SessionID: "s", RunID: run.ID, Data: data})
	if err != nil || ended {
		t.Fatalf("end again: ended=%v %v, want a no-op", ended, err)
	}
	k := e.readKinds("s")
	want := []string{hitchtype.KindMessageAdmitted, hitchtype.KindSubmissionStarted, hitchtype.KindMessageAdmitted,
		hitchtype.KindMessageJoined, hitchtype.KindSubmissionEnded}
	if fmt.Sprint(k) != fmt.Sprint(want) {
		t.Fatalf("kinds %v, want %v", k, want)
	}
	// Interrupts name the active run only.
	_, err = e.ss.SessionAppend(e.ctx, store.SessionAppendParams{SessionID: "s", After: store.AnyPosition,
		Kind: hitchtype.KindSubmissionInterrupt, Data: msgData(hitchtype.SubmissionInterrupted{RunID: run.ID})})
	wantErr(t, "interrupt an ended run", err, store.ErrConflict)
}

func testSessionList(t *testing.T, e *sessEnv) {
	for _, id := range []string{"c", "a", "b", "d"} {
		e.session(id)
	}
	page, err := e.ss.SessionList(e.ctx, store.SessionListParams{Limit: 2})
	if err != nil || len(page) != 2 || page[0].ID != "a" || page[1].ID != "b" {
		t.Fatalf("first page: %v %v", page, err)
	}
	page, err = e.ss.SessionList(e.ctx, store.SessionListParams{After: "b", Limit: 10})
	if err != nil || len(page) != 2 || page[0].ID != "c" || page[1].ID != "d" {
		t.Fatalf("second page: %v %v", page, err)
	}
	// a: a queued message, idle: needs work. b: active run still running:
	// no. c: active run ended: needs work. d: nothing.
	e.admit("a", "m", hitchtype.ModeQueue)
	e.admit("b", "m", hitchtype.ModeQueue)
	e.startNext("b")
	e.admit("c", "m", hitchtype.ModeQueue)
	rc := e.startNext("c")
	l := e.claim(rc.ID, "node", longTTL)
	e.append(l, store.JournalAppendParams{After: l.Run.Position, Entries: entries("end", 1), Status: hitchtype.StatusCompleted,
		Outcome: json.RawMessage(`{"status":"completed"}`)})
	work, err := e.ss.SessionList(e.ctx, store.SessionListParams{NeedsWork: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range work {
		ids = append(ids, s.ID)
	}
	if fmt.Sprint(ids) != "[a c]" {
		t.Fatalf("sessions needing work: %v, want [a c]", ids)
	}

	// e: an active run still running, interrupted in the journal but not
	// asked to cancel (the interrupter died in between): needs work, until
	// the cancel is asked for. f: the interrupt named the run before the
	// active one: no.
	e.session("e")
	e.admit("e", "m", hitchtype.ModeQueue)
	re := e.startNext("e")
	interrupt := func(sid, runID string) {
		t.Helper()
		if _, err := e.ss.SessionAppend(e.ctx, store.SessionAppendParams{SessionID: sid, After: store.AnyPosition,
			Kind: hitchtype.KindSubmissionInterrupt, Data: msgData(hitchtype.SubmissionInterrupted{RunID: runID})}); err != nil {
			t.Fatalf("interrupt %s: %v", runID, err)
		}
	}
	interrupt("e", re.ID)
	e.session("f")
	e.admit("f", "m1", hitchtype.ModeQueue)
	rf := e.startNext("f")
	e.admit("f", "m2", hitchtype.ModeInterrupt)
	interrupt("f", rf.ID)
	if _, err := e.s.RunRequestCancel(e.ctx, store.RunRequestCancelParams{ID: rf.ID}); err != nil {
		t.Fatal(err)
	}
	lf := e.claim(rf.ID, "node", longTTL)
	e.append(lf, store.JournalAppendParams{After: lf.Run.Position, Entries: entries("end", 1), Status: hitchtype.StatusCancelled,
		Outcome: json.RawMessage(`{"status":"cancelled"}`)})
	if _, ended, err := e.ss.SessionEnd(e.ctx, store.SessionEndParams{SessionID: "f", RunID: rf.ID,
		Data: msgData(hitchtype.SubmissionEnded{RunID: rf.ID, Outcome: hitchtype.SubmissionAborted})}); err != nil || !ended {
		t.Fatalf("end f's first submission: %v %v", ended, err)
	}
	e.startNext("f")
	needs := func(want string) {
		t.Helper()
		work, err := e.ss.SessionList(e.ctx, store.SessionListParams{After: "d", NeedsWork: true})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range work {
			ids = append(ids, s.ID)
		}
		if fmt.Sprint(ids) != want {
			t.Fatalf("sessions after d needing work: %v, want %s", ids, want)
		}
	}
	needs("[e]")
	if _, err := e.s.RunRequestCancel(e.ctx, store.RunRequestCancelParams{ID: re.ID}); err != nil {
		t.Fatal(err)
	}
	needs("[]")
}

func testSessionBadInput(t *testing.T, e *sessEnv) {
	_, _, err := e.ss.SessionCreate(e.ctx, store.SessionCreateParams{ID: "", Agent: "a"})
	if err == nil {
		t.Fatal("a session without an id was created")
	}
	_, _, err = e.ss.SessionCreate(e.ctx, store.SessionCreateParams{ID: "x", Agent: "a", Metadata: json.RawMessage(`[1]`)})
	if err == nil {
		t.Fatal("metadata that is not an object was taken")
	}
	_, err = e.ss.SessionAppend(e.ctx, store.SessionAppendParams{SessionID: "nope", After: store.AnyPosition,
		Kind: hitchtype.KindMessageAdmitted, Data: msgData(hitchtype.MessageAdmitted{ID: "m", Mode: hitchtype.ModeQueue})})
	wantErr(t, "admit to a missing session", err, store.ErrSessionNotFound)
	e.session("s")
	for name, p := range map[string]store.SessionAppendParams{
		"bad kind":     {SessionID: "s", After: store.AnyPosition, Kind: hitchtype.KindSubmissionStarted, Data: msgData(hitchtype.SubmissionStarted{})},
		"bad mode":     {SessionID: "s", After: store.AnyPosition, Kind: hitchtype.KindMessageAdmitted, Data: msgData(hitchtype.MessageAdmitted{ID: "m", Mode: "loud"})},
		"no id":        {SessionID: "s", After: store.AnyPosition, Kind: hitchtype.KindMessageAdmitted, Data: msgData(hitchtype.MessageAdmitted{Mode: hitchtype.ModeQueue})},
		"key, no ttl":  {SessionID: "s", After: store.AnyPosition, Kind: hitchtype.KindMessageAdmitted, IdempotencyKey: "k", Data: msgData(hitchtype.MessageAdmitted{ID: "m", Mode: hitchtype.ModeQueue})},
		"after -2":     {SessionID: "s", After: -2, Kind: hitchtype.KindMessageAdmitted, Data: msgData(hitchtype.MessageAdmitted{ID: "m", Mode: hitchtype.ModeQueue})},
		"not json":     {SessionID: "s", After: store.AnyPosition, Kind: hitchtype.KindMessageAdmitted, Data: json.RawMessage(`{`)},
		"key on edit":  {SessionID: "s", After: store.AnyPosition, Kind: hitchtype.KindMessageEdited, IdempotencyKey: "k", KeyTTL: time.Hour, Data: msgData(hitchtype.MessageEdited{ID: "m"})},
		"join, no run": {SessionID: "s", After: store.AnyPosition, Kind: hitchtype.KindMessageJoined, Data: msgData(hitchtype.MessageJoined{ID: "m"})},
	} {
		if _, err := e.ss.SessionAppend(e.ctx, p); err == nil {
			t.Errorf("%s: appended", name)
		}
	}
	if k := e.readKinds("s"); len(k) != 0 {
		t.Fatalf("refused appends wrote %v", k)
	}
}
