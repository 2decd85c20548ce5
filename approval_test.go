package hitch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/tool"
)

// payPolicy asks for a "payments" approval for charge, allows the rest.
var payPolicy = policy.Rules{
	{Tools: []string{"charge"}, Verdict: policy.RequireApproval, Requirement: "payments", Reason: "charging a card needs a person"},
	{Tools: []string{"*"}, Verdict: policy.Allow},
}

func payAgent(t *testing.T, charges *atomic.Int64, approvers approval.Approvers, pol policy.Policy, lim hitch.Limits) *hitch.Agent {
	t.Helper()
	charge := tool.MustNew("charge", "Charges a card.", func(context.Context, struct{}) (string, error) {
		charges.Add(1)
		return "charged", nil
	})
	m := scripted.New("pay", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "charge"}}}, {Text: "over"}}})
	if pol == nil {
		pol = payPolicy
	}
	return build(t, hitch.Spec{Model: m, Tools: []tool.Tool{charge}, Policy: pol, Approvers: approvers, Limits: lim})
}

func members(t *testing.T) *approval.Static {
	t.Helper()
	a, err := approval.NewStatic(
		approval.Member{Name: "alice", Secret: "a-secret", Requirements: []string{"payments"}},
		approval.Member{Name: "bob", Secret: "b-secret", Requirements: []string{"deploys"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func proof(t *testing.T, a approval.Approvers, who, secret, req string) approval.Proof {
	t.Helper()
	p, err := a.Check(context.Background(), approval.Credential{Name: who, Secret: secret}, req)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestApprovalGrantedRunsTheCallOnce(t *testing.T) {
	t.Parallel()
	var charges atomic.Int64
	approvers := members(t)
	a := payAgent(t, &charges, approvers, nil, hitch.Limits{})
	rt, _ := setup(t, a)
	ctx := context.Background()
	run := runToRest(t, rt, a, "pay")
	if run.Status != hitchtype.StatusWaiting || charges.Load() != 0 {
		t.Fatalf("status %s, charges %d", run.Status, charges.Load())
	}
	pending, _, err := rt.PendingApprovals(ctx, hitch.PendingApprovalsParams{RootID: run.ID})
	if err != nil || len(pending) != 1 || pending[0].Call != "t1c1" || pending[0].Requirement != "payments" || pending[0].ExpiresAt == nil {
		t.Fatalf("pending = %+v, %v", pending, err)
	}
	if d := time.Until(*pending[0].ExpiresAt); d < 6*24*time.Hour || d > 7*24*time.Hour {
		t.Errorf("expiry in %s, want 7 days", d)
	}
	if err := rt.Approve(ctx, run.ID, "t1c1", proof(t, approvers, "alice", "a-secret", "payments")); err != nil {
		t.Fatal(err)
	}
	run, err = rt.Await(ctx, run.ID)
	if err != nil || run.Status != hitchtype.StatusCompleted || charges.Load() != 1 {
		t.Fatalf("after approval: %+v %v, charges %d", run, err, charges.Load())
	}
	err = rt.Approve(ctx, run.ID, "t1c1", proof(t, approvers, "alice", "a-secret", "payments"))
	if !errors.Is(err, hitch.ErrAnswered) {
		t.Errorf("second approval: %v", err)
	}
	if !strings.Contains(kinds(journal(t, rt, run.ID)), "approval.granted call.started call.settled") {
		t.Errorf("journal: %s", kinds(journal(t, rt, run.ID)))
	}
}

func TestApprovalRefusals(t *testing.T) {
	t.Parallel()
	var charges atomic.Int64
	approvers, others := members(t), members(t)
	a := payAgent(t, &charges, approvers, nil, hitch.Limits{})
	rt, _ := setup(t, a)
	ctx := context.Background()
	run := runToRest(t, rt, a, "pay")
	expiredProof := proof(t, approvers.WithProofTTL(-time.Second), "alice", "a-secret", "payments")
	approvers.WithProofTTL(approval.DefaultProofTTL)
	for _, tc := range []struct {
		name  string
		proof approval.Proof
		want  error
	}{
		{"other approvers", proof(t, others, "alice", "a-secret", "payments"), approval.ErrOtherApprovers},
		{"other requirement", proof(t, approvers, "bob", "b-secret", "deploys"), approval.ErrOtherRequirement},
		{"proof expired", expiredProof, approval.ErrProofExpired},
		{"no proof", approval.Proof{}, approval.ErrOtherApprovers},
	} {
		if err := rt.Approve(ctx, run.ID, "t1c1", tc.proof); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := rt.Approve(ctx, run.ID, "t9c9", proof(t, approvers, "alice", "a-secret", "payments")); !errors.Is(err, hitch.ErrUnknownCall) {
		t.Errorf("unknown call: %v", err)
	}
	after, _ := rt.Get(ctx, run.ID)
	if after.Position != run.Position || charges.Load() != 0 {
		t.Errorf("a refused answer left a trace: position %d → %d, charges %d", run.Position, after.Position, charges.Load())
	}
}

func TestAgentWithoutApproversRefusesEveryAnswer(t *testing.T) {
	t.Parallel()
	var charges atomic.Int64
	a := payAgent(t, &charges, nil, nil, hitch.Limits{})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "pay")
	err := rt.Approve(context.Background(), run.ID, "t1c1", proof(t, members(t), "alice", "a-secret", "payments"))
	if !errors.Is(err, approval.ErrNoApprovers) {
		t.Fatalf("err = %v", err)
	}
}

func TestRejectionIsShownAndTheRunGoesOn(t *testing.T) {
	t.Parallel()
	var charges atomic.Int64
	approvers := members(t)
	a := payAgent(t, &charges, approvers, nil, hitch.Limits{})
	rt, _ := setup(t, a)
	ctx := context.Background()
	run := runToRest(t, rt, a, "pay")
	if err := rt.Reject(ctx, run.ID, "t1c1", proof(t, approvers, "alice", "a-secret", "payments"), "not this month"); err != nil {
		t.Fatal(err)
	}
	run, _ = rt.Await(ctx, run.ID)
	msgs := strings.Join(told(journal(t, rt, run.ID)), "\n")
	if run.Status != hitchtype.StatusCompleted || charges.Load() != 0 || !strings.Contains(kinds(journal(t, rt, run.ID)), "approval.rejected") {
		t.Fatalf("status %s charges %d\n%s", run.Status, charges.Load(), msgs)
	}
}

func TestPolicyIsAskedAgainAtTheAnswer(t *testing.T) {
	t.Parallel()
	var charges, asked atomic.Int64
	approvers := members(t)
	pol := policy.Func(func(context.Context, policy.Action) (policy.Decision, error) {
		if asked.Add(1) == 1 {
			return policy.Decision{Verdict: policy.RequireApproval, Requirement: "payments"}, nil
		}
		return policy.Decision{Verdict: policy.Deny, Reason: "card frozen meanwhile"}, nil
	})
	a := payAgent(t, &charges, approvers, pol, hitch.Limits{})
	rt, _ := setup(t, a)
	ctx := context.Background()
	run := runToRest(t, rt, a, "pay")
	// The grant is recorded, but the denial is the answer's result.
	err := rt.Approve(ctx, run.ID, "t1c1", proof(t, approvers, "alice", "a-secret", "payments"))
	if !errors.Is(err, hitch.ErrDeniedAtAnswer) || !strings.Contains(err.Error(), "card frozen meanwhile") {
		t.Fatalf("approve: %v, want ErrDeniedAtAnswer", err)
	}
	run, _ = rt.Await(ctx, run.ID)
	if run.Status != hitchtype.StatusCompleted || charges.Load() != 0 || asked.Load() != 2 {
		t.Fatalf("status %s charges %d asked %d", run.Status, charges.Load(), asked.Load())
	}
	if msgs := strings.Join(told(journal(t, rt, run.ID)), "\n"); !strings.Contains(msgs, "at approval time: card frozen meanwhile") {
		t.Errorf("the model was not told of the denial:\n%s", msgs)
	}
}

func TestExpiredApprovals(t *testing.T) {
	t.Parallel()
	for _, toucher := range []string{"sweeper", "await", "answer"} {
		t.Run(toucher, func(t *testing.T) {
			t.Parallel()
			var charges atomic.Int64
			approvers := members(t)
			a := payAgent(t, &charges, approvers, nil, hitch.Limits{ApprovalExpiry: time.Second})
			rt, _, clk := setupAhead(t, a)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			run := runToRest(t, rt, a, "pay")
			clk.advance(2 * time.Second) // past the store-clock deadline
			p := proof(t, approvers, "alice", "a-secret", "payments")
			switch toucher {
			case "sweeper":
				for n := 0; n == 0; {
					var err error
					if n, err = rt.Recover(ctx); err != nil || ctx.Err() != nil {
						t.Fatal(err, ctx.Err())
					}
				}
			case "answer":
				if err := rt.Approve(ctx, run.ID, "t1c1", p); !errors.Is(err, hitch.ErrApprovalExpired) {
					t.Fatalf("late approve: %v", err)
				}
			}
			run, err := rt.Await(ctx, run.ID)
			if err != nil || run.Status != hitchtype.StatusCompleted || charges.Load() != 0 {
				t.Fatalf("status %s (%v), charges %d", run.Status, err, charges.Load())
			}
			if msgs := strings.Join(told(journal(t, rt, run.ID)), "\n"); !strings.Contains(kinds(journal(t, rt, run.ID)), "approval.expired") {
				t.Errorf("no expiry recorded:\n%s", msgs)
			}
			if err := rt.Approve(ctx, run.ID, "t1c1", p); !errors.Is(err, hitch.ErrApprovalExpired) {
				t.Errorf("approve after expiry: %v", err)
			}
		})
	}
}

func TestCommandsRefuseABusyRunner(t *testing.T) {
	t.Parallel()
	var charges atomic.Int64
	approvers := members(t)
	a := payAgent(t, &charges, approvers, nil, hitch.Limits{CommandWait: 100 * time.Millisecond})
	rt, st := setup(t, a)
	ctx := context.Background()
	run := runToRest(t, rt, a, "pay")
	// Another node holds the run's lease (as its live runner would).
	if _, err := st.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "elsewhere", TTL: 300 * time.Millisecond, RunID: run.ID}); err != nil {
		t.Fatal(err)
	}
	err := rt.Approve(ctx, run.ID, "t1c1", proof(t, approvers, "alice", "a-secret", "payments"))
	if !errors.Is(err, hitch.ErrRunnerBusy) || !strings.Contains(err.Error(), "elsewhere") {
		t.Fatalf("approve with a busy runner: %v", err)
	}
	// The refused command is never applied later: when the lease lapses
	// and the run is recovered, the request is still pending.
	time.Sleep(350 * time.Millisecond)
	if _, err := rt.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	run, _ = rt.Await(ctx, run.ID)
	if run.Status != hitchtype.StatusWaiting || charges.Load() != 0 || strings.Contains(kinds(journal(t, rt, run.ID)), "approval.granted") {
		t.Fatalf("status %s, charges %d: %s", run.Status, charges.Load(), kinds(journal(t, rt, run.ID)))
	}
}

// TestSweeperDrivesQueuedRunsAndDeadlines: with the sweeper running, a
// detached run is driven and an approval deadline is acted on without
// anyone touching the runs.
func TestSweeperDrivesQueuedRunsAndDeadlines(t *testing.T) {
	t.Parallel()
	var charges atomic.Int64
	a := payAgent(t, &charges, members(t), nil, hitch.Limits{ApprovalExpiry: time.Second})
	rt, st, clk := setupAhead(t, a)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := rt.Start(ctx, a, "pay", hitch.Detached())
	if err != nil || res.Run.Status != hitchtype.StatusQueued {
		t.Fatalf("detached start: %+v %v", res, err)
	}
	sweepCtx, stopSweep := context.WithCancel(ctx)
	swept := make(chan error, 1)
	go func() { swept <- rt.Sweep(sweepCtx, 10*time.Millisecond) }()
	advanced := false
	for {
		r, err := st.RunGet(ctx, res.Run.ID)
		if err != nil || ctx.Err() != nil {
			t.Fatal(err, ctx.Err())
		}
		if r.Status == hitchtype.StatusWaiting && !advanced {
			clk.advance(2 * time.Second) // past the deadline; the sweeper acts on it
			advanced = true
		}
		if r.Status.Terminal() {
			if r.Status != hitchtype.StatusCompleted || !strings.Contains(kinds(journal(t, rt, r.ID)), "approval.expired") {
				t.Fatalf("status %s: %s", r.Status, kinds(journal(t, rt, r.ID)))
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopSweep()
	if err := <-swept; err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if charges.Load() != 0 {
		t.Error("the expired call ran")
	}
}

// aheadClock is a store clock a test moves ahead of the real one.
type aheadClock struct{ offset atomic.Int64 }

func (c *aheadClock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *aheadClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// setupAhead is setup on a store whose clock the test moves ahead of the
// real one.
func setupAhead(t *testing.T, agents ...*hitch.Agent) (*hitch.Runtime, store.Store, *aheadClock) {
	t.Helper()
	c := &aheadClock{}
	rt, st := hitchtest.New(t, hitch.Config{Agents: agents, CancelPoll: 20 * time.Millisecond}, sqlite.WithClock(c.now))
	return rt, st, c
}

// TestExpiryIsJudgedByTheStoreClock: once a request's deadline passes it
// is no longer listed as pending, even before the lapse is journaled; a
// late answer is refused as expired, before and after the lapse is
// recorded; and a request rejected in time stays rejected after its
// deadline.
func TestExpiryIsJudgedByTheStoreClock(t *testing.T) {
	t.Parallel()
	var charges atomic.Int64
	approvers := members(t)
	a := payAgent(t, &charges, approvers, nil, hitch.Limits{})
	rt, _, clk := setupAhead(t, a)
	ctx := context.Background()
	p := proof(t, approvers, "alice", "a-secret", "payments")
	late := runToRest(t, rt, a, "pay")
	rejected := runToRest(t, rt, a, "pay")
	if err := rt.Reject(ctx, rejected.ID, "t1c1", p, "no"); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Await(ctx, rejected.ID); err != nil {
		t.Fatal(err)
	}
	if req, err := rt.ApprovalRequest(ctx, late.ID, "t1c1"); err != nil || req.Requirement != "payments" {
		t.Fatalf("request before the deadline: %+v %v", req, err)
	}

	clk.advance(7*24*time.Hour + time.Second)
	p = proof(t, approvers, "alice", "a-secret", "payments") // proofs are judged by the store clock too
	if pending, _, err := rt.PendingApprovals(ctx, hitch.PendingApprovalsParams{RootID: late.ID}); err != nil || len(pending) != 0 {
		t.Errorf("pending after the deadline, lapse not yet journaled: %+v %v", pending, err)
	}
	if _, err := rt.ApprovalRequest(ctx, late.ID, "t1c1"); !errors.Is(err, hitch.ErrApprovalExpired) {
		t.Errorf("request after the deadline: %v", err)
	}
	for i := range 2 { // the first records the lapse, the second finds it recorded
		if err := rt.Approve(ctx, late.ID, "t1c1", p); !errors.Is(err, hitch.ErrApprovalExpired) {
			t.Errorf("late approve %d: %v", i, err)
		}
	}
	run, err := rt.Await(ctx, late.ID)
	if err != nil || run.Status != hitchtype.StatusCompleted || !strings.Contains(kinds(journal(t, rt, late.ID)), "approval.expired") {
		t.Errorf("late: %s %v: %s", run.Status, err, kinds(journal(t, rt, late.ID)))
	}
	if _, err := rt.ApprovalRequest(ctx, late.ID, "t1c1"); !errors.Is(err, hitch.ErrApprovalExpired) {
		t.Errorf("request after the lapse is journaled: %v", err)
	}
	for _, err := range []error{rt.Approve(ctx, rejected.ID, "t1c1", p), func() error { _, err := rt.ApprovalRequest(ctx, rejected.ID, "t1c1"); return err }()} {
		if !errors.Is(err, hitch.ErrAnswered) || errors.Is(err, hitch.ErrApprovalExpired) {
			t.Errorf("rejected in time, asked after the deadline: %v", err)
		}
	}
	if charges.Load() != 0 {
		t.Errorf("%d charges", charges.Load())
	}
}

// TestPendingApprovalsPage: the listing pages with a cursor through every
// request, in a stable order, never stopping silently at a limit.
func TestPendingApprovalsPage(t *testing.T) {
	t.Parallel()
	var charges atomic.Int64
	a := payAgent(t, &charges, members(t), nil, hitch.Limits{})
	rt, _ := setup(t, a)
	ctx := context.Background()
	want := map[string]bool{}
	for range 5 {
		want[runToRest(t, rt, a, "pay").ID] = true
	}
	seen, pages := pendingPages(t, rt, 2, 3)
	if pages != 3 {
		t.Errorf("%d pages, want 3", pages)
	}
	if len(seen) != 5 {
		t.Fatalf("listed %v, want the 5 runs once each", seen)
	}
	for _, id := range seen {
		if !want[id] {
			t.Errorf("listed %s twice or unknown", id)
		}
		delete(want, id)
	}
	if _, _, err := rt.PendingApprovals(ctx, hitch.PendingApprovalsParams{After: "not a cursor"}); err == nil {
		t.Error("a bad cursor was accepted")
	}
	if _, _, err := rt.PendingApprovals(ctx, hitch.PendingApprovalsParams{Limit: hitch.MaxPageLimit + 1}); err == nil {
		t.Error("a limit past the maximum was accepted")
	}
}

// pendingPages lists every pending approval with PendingApprovals, limit
// requests a page, and returns their run ids in order and the pages read.
// A page over the limit, an error or more than maxPages pages fails the
// test.
func pendingPages(t *testing.T, rt *hitch.Runtime, limit, maxPages int) (runIDs []string, pages int) {
	t.Helper()
	after := ""
	for pages = 1; ; pages++ {
		page, next, err := rt.PendingApprovals(context.Background(), hitch.PendingApprovalsParams{After: after, Limit: limit})
		if err != nil || len(page) > limit || pages > maxPages {
			t.Fatalf("page %d: %d requests, %v", pages, len(page), err)
		}
		for _, p := range page {
			runIDs = append(runIDs, p.RunID)
		}
		if after = next; after == "" {
			return runIDs, pages
		}
	}
}

// A late answer over any face looks its request up first (for the
// requirement its credential is checked against), and is refused as
// expired there: that look is the touch that records the lapse, as
// docs/journal.md says, and the run goes on when a runner picks it up.
func TestLateLookupRecordsTheLapse(t *testing.T) {
	t.Parallel()
	var charges atomic.Int64
	approvers := members(t)
	a := payAgent(t, &charges, approvers, nil, hitch.Limits{})
	rt, _, clk := setupAhead(t, a)
	ctx := context.Background()
	late := runToRest(t, rt, a, "pay")
	clk.advance(7*24*time.Hour + time.Second)
	if _, err := rt.ApprovalRequest(ctx, late.ID, "t1c1"); !errors.Is(err, hitch.ErrApprovalExpired) {
		t.Fatalf("request after the deadline: %v", err)
	}
	if k := kinds(journal(t, rt, late.ID)); !strings.Contains(k, "approval.expired") {
		t.Fatalf("the late look did not record the lapse: %s", k)
	}
	run, err := rt.Await(ctx, late.ID)
	if err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("after the lapse: %s %v: %s", run.Status, err, kinds(journal(t, rt, late.ID)))
	}
	if n := strings.Count(kinds(journal(t, rt, late.ID)), "approval.expired"); n != 1 {
		t.Errorf("the lapse is journaled %d times", n)
	}
	if charges.Load() != 0 {
		t.Errorf("the expired call ran %d times", charges.Load())
	}
}

// TestPendingApprovalsBeyondAThousand: more than a thousand parked runs
// are listed page by page, each request once, without naming a family.
func TestPendingApprovalsBeyondAThousand(t *testing.T) {
	t.Parallel()
	var charges atomic.Int64
	a := payAgent(t, &charges, members(t), nil, hitch.Limits{})
	rt, _ := hitchtest.New(t, hitch.Config{Agents: []*hitch.Agent{a}}, sqlite.WithSync(sqlite.SyncNormal))
	const n = 1005
	ctx := context.Background()
	ids := make(chan string, n)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				res, err := rt.Start(ctx, a, "pay", hitch.WithID(fmt.Sprintf("pay-%04d", i)))
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := rt.Await(ctx, res.Run.ID); err != nil {
					t.Error(err)
					return
				}
				ids <- res.Run.ID
			}
		})
	}
	wg.Wait()
	close(ids)
	if t.Failed() {
		t.FailNow()
	}
	listed, pages := pendingPages(t, rt, 300, 10)
	seen := map[string]int{}
	for _, id := range listed {
		seen[id]++
	}
	for id := range ids {
		if seen[id] != 1 {
			t.Errorf("run %s listed %d times", id, seen[id])
		}
	}
	if len(seen) != n || pages != 4 {
		t.Errorf("%d runs in %d pages, want %d in 4", len(seen), pages, n)
	}
}
