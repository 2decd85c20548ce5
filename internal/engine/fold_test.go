package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store"
)

// je is one journal entry of a fold test, before positions are given.
type je struct {
	kind string
	data any
}

func journalOf(es ...je) []store.Entry {
	out := make([]store.Entry, 0, len(es)+1)
	out = append(out, store.Entry{Pos: 1, Kind: KindRunStarted, Data: mustJSON(RunStarted{Agent: "a", Version: 1, Input: "hi", DepthLeft: 1})})
	for i, e := range es {
		d, ok := e.data.(json.RawMessage)
		if !ok {
			d = mustJSON(e.data)
		}
		out = append(out, store.Entry{Pos: int64(i + 2), Kind: e.kind, Data: d})
	}
	return out
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func usage(in, out int64) *model.Usage {
	return &model.Usage{InputTokens: &in, OutputTokens: &out, CachedInputTokens: model.Int64(0)}
}

// reply is a turn-1 reply asking for n calls of "t".
func reply(n int, u *model.Usage) je {
	r := model.Reply{Usage: u}
	for i := range n {
		r.ToolCalls = append(r.ToolCalls, model.ToolCall{ID: string(rune('a' + i)), Name: "t", Arguments: "{}"})
	}
	return je{KindModelReply, ModelReply{Attempt: 1, Turn: 1, Reply: r}}
}

var (
	attempt1 = je{KindModelAttempt, ModelAttempt{Attempt: 1, Turn: 1}}
	allow1   = je{KindCallDecided, CallDecided{Call: "t1c1", Verdict: policy.Allow}}
	start1   = je{KindCallStarted, CallStarted{Call: "t1c1", Attempt: 1}}
	deadline = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	approve1 = je{KindCallDecided, CallDecided{Call: "t1c1", Verdict: policy.RequireApproval, Requirement: "ops", ExpiresAt: &deadline}}
)

// TestFold folds one journal per entry kind and recovery rule and checks
// the state the runner would act on.
func TestFold(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		entries []je
		check   func(*state) string
	}{
		{"started", nil, func(s *state) string {
			if s.started.Input != "hi" || s.pos != 1 || s.lastTurn() != nil || s.finalAt != -1 {
				return "bad start"
			}
			return ""
		}},
		{"context", []je{{KindContext, Context{Instructions: "be brief", Tools: []string{"t"}}}}, func(s *state) string {
			if s.context == nil || s.context.Instructions != "be brief" || s.finalAt != -1 {
				return "context not kept"
			}
			return ""
		}},
		{"final turn context", []je{attempt1, reply(0, usage(1, 1)), {KindContext, Context{FinalTurn: true, Note: "last turn", Tools: []string{}}}}, func(s *state) string {
			if s.finalAt != 1 || s.finalNote != "last turn" {
				return "final turn not marked"
			}
			if m := s.messages(); m[len(m)-1].Text != "last turn" {
				return "the final note is not the last message"
			}
			return ""
		}},
		{"attempt in flight (recovery: issue again)", []je{attempt1}, func(s *state) string {
			if !s.inFlight || s.attempts != 1 || s.usage.Generations != 0 {
				return "attempt not in flight"
			}
			return ""
		}},
		{"attempt after an unrecorded interruption counts as unreported", []je{attempt1, {KindModelAttempt, ModelAttempt{Attempt: 2, Turn: 1}}}, func(s *state) string {
			if s.attempts != 2 || s.usage.Generations != 1 || s.usage.InputTokens != nil {
				return "interrupted attempt not counted"
			}
			return ""
		}},
		{"interrupted", []je{attempt1, {KindModelLost, ModelInterrupted{Attempt: 1}}}, func(s *state) string {
			if s.inFlight || s.usage.Generations != 1 || s.usage.InputTokens != nil {
				return "interruption not counted as unreported"
			}
			return ""
		}},
		{"reply", []je{attempt1, reply(2, usage(10, 3))}, func(s *state) string {
			t := s.lastTurn()
			if s.inFlight || t == nil || len(t.calls) != 2 || t.calls[1].key != "t1c2" || *s.usage.InputTokens != 10 || s.usage.Generations != 1 {
				return "reply not folded"
			}
			return ""
		}},
		{"failed", []je{attempt1, {KindModelFailed, ModelFailed{Attempt: 1, Kind: model.KindRateLimited, Message: "slow down"}}}, func(s *state) string {
			if s.inFlight || s.failures != 1 || s.lastFailed == nil || s.lastFailed.Message != "slow down" || s.usage.InputTokens != nil {
				return "failure not folded"
			}
			return ""
		}},
		{"reply resets failures", []je{attempt1, {KindModelFailed, ModelFailed{Attempt: 1, Kind: model.KindRateLimited}}, {KindModelAttempt, ModelAttempt{Attempt: 2, Turn: 1}}, reply(0, usage(1, 1))}, func(s *state) string {
			if s.failures != 0 || s.lastFailed != nil || s.attempts != 2 {
				return "failures not reset"
			}
			return ""
		}},
		{"compacted", []je{attempt1, reply(0, usage(1, 1)), {KindModelAttempt, ModelAttempt{Attempt: 2, Turn: 2, Purpose: "compaction"}},
			{KindCompacted, Compacted{Attempt: 2, Through: 1, Summary: "so far", Usage: usage(5, 5)}}}, func(s *state) string {
			if s.compactedThrough != 1 || s.summary != "so far" || s.compactTried != 1 || *s.usage.InputTokens != 6 {
				return "compaction not folded"
			}
			if m := s.messages(); len(m) != 2 || !strings.HasSuffix(m[1].Text, "so far") {
				return "the summary does not replace the turns"
			}
			return ""
		}},
		{"compaction failed", []je{attempt1, reply(0, usage(1, 1)), {KindModelAttempt, ModelAttempt{Attempt: 2, Turn: 2, Purpose: "compaction"}},
			{KindCompacted, Compacted{Attempt: 2, Through: 1, Error: "empty"}}}, func(s *state) string {
			if s.compactedThrough != 0 || s.compactTried != 1 || s.usage.Generations != 2 || s.usage.InputTokens != nil {
				return "failed compaction not folded"
			}
			return ""
		}},
		{"allowed, not started (recovery: start)", []je{attempt1, reply(1, nil), allow1}, func(s *state) string {
			c := s.findCall("t1c1")
			if !c.decided || c.done || c.started != 0 {
				return "allowed call not ready to start"
			}
			return ""
		}},
		{"denied", []je{attempt1, reply(1, nil), {KindCallDecided, CallDecided{Call: "t1c1", Verdict: policy.Deny, Reason: "no"}}}, func(s *state) string {
			if c := s.findCall("t1c1"); !c.done || !c.isError || c.result != "denied by policy: no" {
				return "denial not folded"
			}
			return ""
		}},
		{"rejected", []je{attempt1, reply(1, nil), {KindCallRejected, CallRejected{Call: "t1c1", Error: "no such tool"}}}, func(s *state) string {
			if c := s.findCall("t1c1"); !c.done || !c.isError || c.result != "no such tool" {
				return "rejection not folded"
			}
			return ""
		}},
		{"hooked rewrite", []je{attempt1, reply(1, nil), allow1, {KindCallHooked, CallHooked{Call: "t1c1", Action: "run", Arguments: json.RawMessage(`{"x":1}`)}}}, func(s *state) string {
			if c := s.findCall("t1c1"); !c.hooked || c.args() != `{"x":1}` || c.done {
				return "hook rewrite not folded"
			}
			return ""
		}},
		{"hooked deny", []je{attempt1, reply(1, nil), allow1, {KindCallHooked, CallHooked{Call: "t1c1", Action: "deny", Reason: "nope"}}}, func(s *state) string {
			if c := s.findCall("t1c1"); !c.done || c.result != "denied by a hook: nope" {
				return "hook denial not folded"
			}
			return ""
		}},
		{"started, not settled (recovery: uncertain or replay)", []je{attempt1, reply(1, nil), allow1, start1}, func(s *state) string {
			if c := s.findCall("t1c1"); c.started != 1 || c.done || c.uncertain {
				return "started call not open"
			}
			return ""
		}},
		{"settled", []je{attempt1, reply(1, nil), allow1, start1, {KindCallSettled, CallSettled{Call: "t1c1", Output: "42"}}}, func(s *state) string {
			c := s.findCall("t1c1")
			if !c.done || c.isError || c.result != "42" {
				return "settlement not folded"
			}
			if m := s.messages(); m[len(m)-1].Role != model.RoleTool || m[len(m)-1].Text != "42" {
				return "the result is not in the history"
			}
			return ""
		}},
		{"failed call", []je{attempt1, reply(1, nil), allow1, start1, {KindCallFailed, CallFailed{Call: "t1c1", Error: "boom"}}}, func(s *state) string {
			if c := s.findCall("t1c1"); !c.done || !c.isError || c.result != "boom" {
				return "call failure not folded"
			}
			return ""
		}},
		{"uncertain", []je{attempt1, reply(1, nil), allow1, start1, {KindCallUncertain, CallUncertain{Call: "t1c1", Reason: "crash"}}}, func(s *state) string {
			if u := s.uncertainCalls(); len(u) != 1 || u[0] != "t1c1" {
				return "uncertain call not listed"
			}
			return ""
		}},
		{"lost attempt", []je{attempt1, reply(1, nil), allow1, start1, {KindCallLost, CallLost{Call: "t1c1", Attempt: 1, Reason: "crash"}}}, func(s *state) string {
			if c := s.findCall("t1c1"); c.done || c.uncertain || c.started != 1 || len(s.uncertainCalls()) != 0 {
				return "a lost attempt changed the call"
			}
			return ""
		}},
		{"reconciled", []je{attempt1, reply(1, nil), allow1, start1, {KindCallUncertain, CallUncertain{Call: "t1c1"}},
			{KindCallReconcile, CallReconciled{Call: "t1c1", Output: "done"}}}, func(s *state) string {
			if c := s.findCall("t1c1"); !c.done || !c.reconciled || c.uncertain || c.result != "done" || len(s.uncertainCalls()) != 0 {
				return "reconciliation not folded"
			}
			return ""
		}},
		{"reconciled unconfirmed", []je{attempt1, reply(1, nil), allow1, start1, {KindCallUncertain, CallUncertain{Call: "t1c1"}},
			{KindCallReconcile, CallReconciled{Call: "t1c1", Unconfirmed: true}}}, func(s *state) string {
			if c := s.findCall("t1c1"); !c.isError || !strings.Contains(c.result, "outcome unknown") {
				return "unconfirmed reconciliation not folded"
			}
			return ""
		}},
		{"approval pending (recovery: stays pending)", []je{attempt1, reply(1, nil), approve1}, func(s *state) string {
			if len(s.pendingApprovals(time.Time{})) != 1 || len(s.pendingApprovals(deadline.Add(-time.Second))) != 1 {
				return "request not pending"
			}
			if len(s.pendingApprovals(deadline)) != 0 {
				return "a request past its deadline is listed"
			}
			return ""
		}},
		{"approval granted (recovery: start without asking)", []je{attempt1, reply(1, nil), approve1, {KindApprovalGrant, ApprovalAnswer{Call: "t1c1", By: "alice"}}}, func(s *state) string {
			if c := s.findCall("t1c1"); c.approval != approvalGranted || c.done || len(s.pendingApprovals(time.Time{})) != 0 {
				return "grant not folded"
			}
			return ""
		}},
		{"approval rejected", []je{attempt1, reply(1, nil), approve1, {KindApprovalDeny, ApprovalAnswer{Call: "t1c1", By: "alice", Reason: "no"}}}, func(s *state) string {
			if c := s.findCall("t1c1"); c.approval != approvalRejected || !c.done || !strings.Contains(c.result, "rejected by alice") || !strings.HasSuffix(c.result, ": no") {
				return "rejection not folded"
			}
			return ""
		}},
		{"approval denied at the answer keeps the request", []je{attempt1, reply(1, nil), approve1, {KindApprovalGrant, ApprovalAnswer{Call: "t1c1"}},
			{KindCallDecided, CallDecided{Call: "t1c1", Verdict: policy.Deny, Reason: "at approval time: frozen"}}}, func(s *state) string {
			if c := s.findCall("t1c1"); !c.done || c.decision.Verdict != policy.RequireApproval || c.approval != approvalGranted {
				return "denial at the answer lost the request"
			}
			return ""
		}},
		{"approval expired", []je{attempt1, reply(1, nil), approve1, {KindApprovalLapse, ApprovalExpired{Call: "t1c1", ExpiredAt: deadline}}}, func(s *state) string {
			if c := s.findCall("t1c1"); c.approval != approvalExpired || !c.done || !strings.Contains(c.result, "expired") {
				return "expiry not folded"
			}
			return ""
		}},
		{"roots", []je{{KindRootGranted, RootChanged{Path: "/a"}}, {KindRootGranted, RootChanged{Path: "/b"}}, {KindRootGranted, RootChanged{Path: "/a"}},
			{KindRootRevoked, RootChanged{Path: "/b"}}}, func(s *state) string {
			if strings.Join(s.roots, ",") != "/a" {
				return "roots " + strings.Join(s.roots, ",")
			}
			return ""
		}},
		{"answer refused", []je{attempt1, reply(0, nil), {KindAnswerRefused, AnswerRefused{Turn: 1, Reason: "not JSON", Message: "again"}}}, func(s *state) string {
			if s.refusals != 1 || !s.lastTurn().refused {
				return "refusal not folded"
			}
			if m := s.messages(); m[len(m)-1].Text != "again" {
				return "the correction is not in the history"
			}
			return ""
		}},
		{"waiting, then a new attempt clears it", []je{attempt1, reply(1, nil), approve1, {KindRunWaiting, RunWaiting{Reason: "approval", Calls: []string{"t1c1"}}}}, func(s *state) string {
			if s.waiting == nil || s.waiting.Reason != "approval" {
				return "waiting not folded"
			}
			return ""
		}},
		{"ended", []je{{KindRunEnded, Outcome{Status: "cancelled"}}}, func(s *state) string {
			if s.ended == nil || s.ended.Status != "cancelled" {
				return "end not folded"
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := fold(journalOf(tc.entries...))
			if err != nil {
				t.Fatal(err)
			}
			if why := tc.check(s); why != "" {
				t.Error(why)
			}
		})
	}
}

// TestFoldRefuses: journals the fold must not replay.
func TestFoldRefuses(t *testing.T) {
	t.Parallel()
	gap := journalOf(attempt1, reply(0, nil))
	gap = append(gap[:1], gap[2:]...)
	dup := journalOf(attempt1)
	dup = append(dup, dup[1])
	for _, tc := range []struct {
		name    string
		entries []store.Entry
		want    string
		corrupt bool
	}{
		{"gap", gap, "follows position 1", true},
		{"repeated position", dup, "follows position 2", true},
		{"empty", nil, "does not start with", false},
		{"no start", journalOf(attempt1)[1:], "follows position 0", true},
		{"unknown kind", journalOf(je{"model.guess", struct{}{}}), "unknown kind", false},
		{"unknown call", journalOf(attempt1, reply(1, nil), je{KindCallSettled, CallSettled{Call: "t9c9"}}), "unknown call", false},
		{"bad data", journalOf(je{KindModelAttempt, json.RawMessage(`{"attempt":"one"}`)}), "model.attempt", false},
		{"refusal before a reply", journalOf(je{KindAnswerRefused, AnswerRefused{}}), "before any reply", false},
	} {
		_, err := fold(tc.entries)
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrCorrupt) != tc.corrupt {
			t.Errorf("%s: %v, want %q (corrupt %v)", tc.name, err, tc.want, tc.corrupt)
		}
	}
}
