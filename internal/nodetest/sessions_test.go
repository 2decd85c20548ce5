package nodetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/tool"
)

// Sessions take part in the chaos: while nodes are killed, stopped, paused
// and cut off, a sender admits messages (queued and steering) to a few
// sessions. The nodes do all of the sessions' work: the sender's runtime
// knows no agent, so it cannot start a submission itself. Afterwards every
// admitted message was acknowledged and is in exactly one ended submission
// (started by it, or joined to it), queued ones started in admission
// order, and every request any node sent the model was a valid transcript.

// sessionAgent works a message in two turns of calls to a replayable tool
// (a node killed inside one runs it again; the session must not park),
// then answers "done".
func sessionAgent(requests string) (*hitch.Agent, error) {
	look, err := tool.New("look", "Looks, and may be repeated.", func(ctx context.Context, _ struct{}) (string, error) {
		if err := randomPause(ctx, 100*time.Millisecond); err != nil {
			return "", err
		}
		return "seen", nil
	}, tool.WithReplay(100))
	if err != nil {
		return nil, err
	}
	m := &hitchtest.RecordingModel{Path: requests, Next: scripted.New("sessions", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Name: "look", Args: `{}`}, {Name: "look", Args: `{}`}}, Delay: 200 * time.Millisecond},
		{Calls: []scripted.Call{{Name: "look", Args: `{}`}}, Delay: 200 * time.Millisecond},
		{Text: "done", Delay: 100 * time.Millisecond},
	}})}
	return hitch.Build(hitch.Spec{Name: "sessions", Model: m, Tools: []tool.Tool{look}, Policy: policy.AllowAll(),
		Limits: hitch.Limits{ModelAttempts: 100, RetryDelay: 10 * time.Millisecond}})
}

// sessionSender admits messages to sessions until it has sent them all or
// ctx ends. Each send carries an idempotency key and is retried until it is
// acknowledged, so every message is admitted once whatever the database
// does meanwhile.
type sessionSender struct {
	rt       *hitch.Runtime
	sessions []string
	total    int

	mu    sync.Mutex
	acked map[string][]string // session → message ids, in acknowledgement order
	texts map[string]string   // message id → text
	steer int
	done  chan struct{}
}

func (s *sessionSender) run(ctx context.Context, t testing.TB) {
	defer close(s.done)
	for i := range s.total {
		sid := s.sessions[rand.IntN(len(s.sessions))]
		text := fmt.Sprintf("%s m%04d", sid, i)
		mode := sessions.ModeQueue
		if rand.IntN(10) < 3 {
			mode = sessions.ModeSteer
		}
		for {
			res, err := s.rt.Sessions().Send(ctx, sid, text, sessions.SendOptions{Mode: mode, IdempotencyKey: text})
			if err == nil {
				s.mu.Lock()
				s.acked[sid] = append(s.acked[sid], res.MessageID)
				s.texts[res.MessageID] = text
				if mode == sessions.ModeSteer {
					s.steer++
				}
				s.mu.Unlock()
				break
			}
			if ctx.Err() != nil {
				t.Errorf("send %q: %v", text, err)
				return
			}
			retry := time.NewTimer(50 * time.Millisecond) // a retry's backoff, not a synchronisation
			select {
			case <-retry.C:
			case <-ctx.Done():
				retry.Stop()
			}
		}
		gap := time.NewTimer(time.Duration(20+rand.IntN(300)) * time.Millisecond) // a random moment
		select {
		case <-gap.C:
		case <-ctx.Done():
			gap.Stop()
		}
	}
}

// sessionReport is what checkSessions found.
type sessionReport struct {
	messages, submissions, joined, requests int
}

// checkSessions verifies every session's invariants from its journal, its
// submissions' run journals and the requests file.
func checkSessions(t *testing.T, ctx context.Context, ss store.SessionStore, st store.Store, s *sessionSender, requests string) sessionReport {
	t.Helper()
	var rep sessionReport
	for _, sid := range s.sessions {
		var es []store.SessionEntry
		for after := int64(0); ; {
			page, err := ss.SessionRead(ctx, store.SessionReadParams{SessionID: sid, After: after, Limit: 1000})
			if err != nil {
				t.Fatalf("read session %s: %v", sid, err)
			}
			es = append(es, page...)
			if len(page) < 1000 {
				break
			}
			after = page[len(page)-1].Pos
		}
		admittedAt := map[string]int64{}
		var admitted []string
		worked := map[string]int{}
		runOf, joinedTo := map[string]string{}, map[string]string{}
		ends := map[string][]hitchtype.SubmissionEnded{}
		var startOrder []string
		for j, e := range es {
			if e.Pos != int64(j+1) {
				t.Errorf("session %s: entry %d has position %d", sid, j+1, e.Pos)
			}
			switch e.Kind {
			case hitchtype.KindMessageAdmitted:
				var m hitchtype.MessageAdmitted
				_ = json.Unmarshal(e.Data, &m)
				if _, dup := admittedAt[m.ID]; dup {
					t.Errorf("session %s: %s admitted twice", sid, m.ID)
				}
				admittedAt[m.ID] = e.Pos
				admitted = append(admitted, m.ID)
				if m.Text != s.texts[m.ID] {
					t.Errorf("session %s: %s admitted as %q, sent as %q", sid, m.ID, m.Text, s.texts[m.ID])
				}
			case hitchtype.KindSubmissionStarted:
				var m hitchtype.SubmissionStarted
				_ = json.Unmarshal(e.Data, &m)
				worked[m.MessageID]++
				runOf[m.MessageID] = m.RunID
				startOrder = append(startOrder, m.MessageID)
			case hitchtype.KindMessageJoined:
				var m hitchtype.MessageJoined
				_ = json.Unmarshal(e.Data, &m)
				worked[m.ID]++
				joinedTo[m.ID] = m.RunID
			case hitchtype.KindSubmissionEnded:
				var m hitchtype.SubmissionEnded
				_ = json.Unmarshal(e.Data, &m)
				ends[m.RunID] = append(ends[m.RunID], m)
			}
		}
		// Every acknowledged message admitted once, nothing else admitted.
		if got, want := strings.Join(admitted, " "), strings.Join(s.acked[sid], " "); got != want {
			t.Errorf("session %s: admitted %s, acknowledged %s", sid, got, want)
		}
		rep.messages += len(admitted)
		// Each in exactly one ended submission.
		for _, id := range admitted {
			run := runOf[id] + joinedTo[id]
			switch {
			case worked[id] != 1:
				t.Errorf("session %s: %s started or joined %d times, want 1", sid, id, worked[id])
			case len(ends[run]) != 1:
				t.Errorf("session %s: %s is in run %s, which ended %d times", sid, id, run, len(ends[run]))
			case ends[run][0].Outcome != hitchtype.SubmissionCompleted || ends[run][0].Answer != "done":
				t.Errorf("session %s: %s's submission ended %+v", sid, id, ends[run][0])
			}
			if joinedTo[id] != "" {
				rep.joined++
			}
		}
		// FIFO: submissions started in admission order.
		for j := 1; j < len(startOrder); j++ {
			if admittedAt[startOrder[j]] < admittedAt[startOrder[j-1]] {
				t.Errorf("session %s: %s started before %s, admitted later", sid, startOrder[j-1], startOrder[j])
			}
		}
		// Each submission's run: one terminal entry, every call with its
		// result, and each steer it took joined to it.
		for _, run := range runOf {
			rep.submissions++
			es, err := st.JournalRead(ctx, store.JournalReadParams{RunID: run, Limit: 10000})
			if err != nil {
				t.Errorf("session %s: read run %s: %v", sid, run, err)
				continue
			}
			for j, e := range es {
				if e.Pos != int64(j+1) {
					t.Errorf("run %s: entry %d has position %d", run, j+1, e.Pos)
				}
			}
			calls := hitchtest.CallsOf(es)
			for call := range calls.Uncertain {
				t.Errorf("run %s: call %s uncertain, though its tool is replayable", run, call)
			}
			if calls.Endings != 1 || len(calls.Open) > 0 {
				t.Errorf("run %s: %d terminal entries, calls %v without a result", run, calls.Endings, calls.Open)
			}
		}
	}
	b, err := os.ReadFile(requests)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var req model.Request
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			t.Errorf("request %d: %v", i, err)
			continue
		}
		if err := hitchtest.TranscriptError(&req); err != nil {
			t.Errorf("request %d: %v", i, err)
		}
		rep.requests++
	}
	return rep
}
