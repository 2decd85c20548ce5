package hitch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/sandbox/local"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/tool"
	"github.com/hitch-dev/hitch/tool/builtin"
)

// readerAgent reads a file outside its workspace after an approval, so a
// test can grant the root in between.
func readerAgent(t *testing.T, ws, outside string) (*hitch.Agent, *approval.Static) {
	t.Helper()
	factory := func() (sandbox.Sandbox, []tool.Tool, error) {
		sb, err := local.New(local.Config{Root: ws})
		if err != nil {
			return nil, nil, err
		}
		ts, err := builtin.New(sb, "read")
		return sb, ts, err
	}
	sb, decl, err := factory()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.(*local.Sandbox).Close() })
	m := scripted.New("reader", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Name: "read", Args: `{"path": "` + filepath.Join(outside, "data.txt") + `"}`}}},
		{Text: "read it"},
	}})
	pol := policy.Rules{{Tools: []string{"read"}, Verdict: policy.RequireApproval, Requirement: "payments"}}
	approvers := members(t)
	return build(t, hitch.Spec{Name: "reader", Model: m, Tools: decl, Workspace: factory, Policy: pol, Approvers: approvers}), approvers
}

func TestGrantedRootsAreJournaledAndSurviveRecovery(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ws, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "data.txt"), []byte("secret sauce\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, approvers := readerAgent(t, ws, outside)
	db := filepath.Join(t.TempDir(), "ws.db")
	st := hitchtest.OpenStore(t, db)
	rt := hitchtest.Open(t, hitch.Config{Store: st, Agents: []*hitch.Agent{a}})
	run := runToRest(t, rt, a, "read the data")
	if err := rt.GrantRoot(ctx, run.ID, outside, "ops"); err != nil {
		t.Fatal(err)
	}
	if err := rt.GrantRoot(ctx, run.ID, outside, "ops"); err != nil {
		t.Errorf("granting twice: %v", err)
	}
	if err := rt.GrantRoot(ctx, run.ID, filepath.Join(outside, "nope"), "ops"); err == nil {
		t.Error("granted a missing directory")
	}
	roots, err := rt.Roots(ctx, run.ID)
	if err != nil || len(roots) != 1 || roots[0] != outside {
		t.Fatalf("roots %v %v", roots, err)
	}
	// A new runtime (another process, say) answers and drives the run: it
	// must rebuild the grant from the journal.
	if _, err := rt.Await(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	rt2, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{a}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close(context.Background())
	p := proof(t, approvers, "alice", "a-secret", "payments")
	if err := rt2.Approve(ctx, run.ID, "t1c1", p); err != nil {
		t.Fatal(err)
	}
	run, err = rt2.Await(ctx, run.ID)
	msgs := strings.Join(told(journal(t, rt2, run.ID)), "\n")
	if err != nil || run.Status != hitchtype.StatusCompleted || !strings.Contains(msgs, "secret sauce") {
		t.Fatalf("status %s %v\n%s", run.Status, err, msgs)
	}
	if !strings.Contains(kinds(journal(t, rt2, run.ID)), "workspace.granted") {
		t.Error("the grant is not journaled")
	}
	if err := rt2.RevokeRoot(ctx, run.ID, outside, "ops"); !errors.Is(err, store.ErrEnded) {
		t.Errorf("revoke on an ended run: %v", err)
	}
	// Another run of the same agent never got the grant.
	other := runToRest(t, rt2, a, "read the data too")
	if err := rt2.Approve(ctx, other.ID, "t1c1", p); err != nil {
		t.Fatal(err)
	}
	other, _ = rt2.Await(ctx, other.ID)
	if msgs := strings.Join(told(journal(t, rt2, other.ID)), "\n"); strings.Contains(msgs, "secret sauce") || !strings.Contains(msgs, "call.failed") {
		t.Errorf("a root granted to one run reached another:\n%s", msgs)
	}
}

// TestGrantLeavesAQueuedRunQueued: a grant or a revocation unblocks
// nothing, so on a run nobody drives yet it records its entry and leaves
// the run queued and unleased: it never claims the run or calls its model.
func TestGrantLeavesAQueuedRunQueued(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ws, outside := t.TempDir(), t.TempDir()
	a, _ := readerAgent(t, ws, outside)
	rt, st := hitchtest.New(t, hitch.Config{Agents: []*hitch.Agent{a}})
	res, err := rt.Start(ctx, a, "read the data", hitch.Detached())
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.GrantRoot(ctx, res.Run.ID, outside, "ops"); err != nil {
		t.Fatal(err)
	}
	if err := rt.RevokeRoot(ctx, res.Run.ID, outside, "ops"); err != nil {
		t.Fatal(err)
	}
	if err := rt.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	raw, err := st.RunGet(ctx, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if raw.Status != hitchtype.StatusQueued || raw.LeaseOwner != "" {
		t.Fatalf("the grant left the run %s leased to %q, want queued and unleased", raw.Status, raw.LeaseOwner)
	}
	es, err := rt.Journal(ctx, res.Run.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range es {
		kinds = append(kinds, e.Kind)
	}
	if want := []string{hitchtype.KindRunStarted, hitchtype.KindRootGranted, hitchtype.KindRootRevoked}; strings.Join(kinds, " ") != strings.Join(want, " ") {
		t.Fatalf("journal %v, want %v: the grant drove the run", kinds, want)
	}
}
