package main

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/doctor"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/triggers"
)

// backend is what a command acts on: the runtime in this process
// (localBackend, over hitch.Runtime and the store) or a hitch serve
// (remoteBackend, over client.Client, with --server). Each command is
// written once against it, so a fix reaches both; the table test in
// backend_test.go runs every command over both and compares what they
// print and their exit codes.
//
// Both report the same refusal with errors of the same exit code
// (exitOf). A method a backend cannot carry out returns a usage error
// that says so, never a silent fallback to the other.
type backend interface {
	// Start starts a run (p.Agent empty: the only agent) and returns what
	// the start did; a command then settles it.
	Start(ctx context.Context, p startParams) (hitch.StartResult, error)
	// Fork creates a run from a run's history up to a position (hitch.Runtime.Fork);
	// a command then settles it.
	Fork(ctx context.Context, id string, at int64, o hitch.ForkOptions) (hitch.StartResult, error)
	// Run returns one run.
	Run(ctx context.Context, id string) (hitch.Run, error)
	// Runs lists one page of runs, newest first; next is the cursor of the
	// following page, empty after the last.
	Runs(ctx context.Context, p hitch.RunsParams) (runs []hitch.Run, next string, err error)
	// Journal reads a run's entries after a position, at most limit (0: a
	// default page); more says a following page may hold more.
	Journal(ctx context.Context, id string, after int64, limit int) (es []store.Entry, more bool, err error)
	// Follow yields a run's entries after a position as they are
	// journaled, until the run has ended and all are read, or ctx ends.
	Follow(ctx context.Context, id string, after int64) iter.Seq2[store.Entry, error]
	// Settle prints the entries of a run past after as they are journaled
	// until it ends or parks, and returns it then.
	Settle(ctx context.Context, id string, after int64) (hitch.Run, error)
	// Cancel records a durable cancel and returns the run as it stands
	// once its runner settled or the command wait ran out.
	Cancel(ctx context.Context, id string) (hitch.Run, error)
	// Reconcile settles an uncertain call.
	Reconcile(ctx context.Context, id string, r hitch.Reconciliation) error
	// Wake delivers an event to a run parked on await_event.
	Wake(ctx context.Context, id string, w wakeParams) error
	// CompleteCall gives a pending or held call its result.
	CompleteCall(ctx context.Context, id string, c hitch.Completion) error

	// FamilyUsage sums a family's usage and cost from its runs' outcomes.
	FamilyUsage(ctx context.Context, rootID string) (hitch.FamilyUsage, error)
	// Budget lists a run's bounded counters, family first.
	Budget(ctx context.Context, id string) (hitch.RunBudget, error)
	// RunContext is a run's latest model requests (at most n) and what its
	// family has cost so far.
	RunContext(ctx context.Context, id string, n int) (runContext, error)
	// Waits lists what a parked run waits on; empty for a run that does
	// not wait.
	Waits(ctx context.Context, id string) ([]hitch.Wait, error)

	// Approvals lists one page of pending approval requests, of one
	// family or all (rootID empty).
	Approvals(ctx context.Context, rootID, after string, limit int) (page []hitch.PendingApproval, next string, err error)
	// Approval returns one pending request.
	Approval(ctx context.Context, runID, call string) (hitch.PendingApproval, error)
	// Answer approves or rejects a request with an approver's credential,
	// checked against the agent's approvers.
	Answer(ctx context.Context, runID, call string, cred approval.Credential, approve bool, reason string) error

	// Roots lists the directories granted to a run besides its workspace.
	Roots(ctx context.Context, id string) ([]string, error)
	// Grant and Revoke change them; by is recorded where the backend can.
	Grant(ctx context.Context, id, path, by string) error
	Revoke(ctx context.Context, id, path, by string) error

	// Sessions lists one page of sessions by id.
	Sessions(ctx context.Context, p sessions.ListParams) ([]sessions.Session, error)
	// Session returns one session.
	Session(ctx context.Context, id string) (sessions.Session, error)
	// CreateSession creates a session of an agent (empty: the only one).
	CreateSession(ctx context.Context, id, agent string) error
	// Send admits a message.
	Send(ctx context.Context, id, text string, o sessions.SendOptions) (sessions.SendResult, error)
	// Interrupt interrupts the session's current submission.
	Interrupt(ctx context.Context, id string) error
	// Queue lists the queued messages in the order they will start.
	Queue(ctx context.Context, id string) ([]sessions.QueuedMessage, error)
	// Edit and Remove change or drop a queued message.
	Edit(ctx context.Context, id, message, text string) error
	Remove(ctx context.Context, id, message string) error
	// SessionStatus folds a session's journal; SessionCost is what it has
	// cost so far.
	SessionStatus(ctx context.Context, id string) (sessions.Status, error)
	SessionCost(ctx context.Context, id string) (hitch.RunningCost, error)
	// AwaitSession returns once the session has no active submission and
	// nothing queued.
	AwaitSession(ctx context.Context, id string) error
	// WatchSession hands see each entry the session's submissions' runs
	// journal from now on, until stop; stop with rested set first lets
	// the entries journaled so far arrive.
	WatchSession(ctx context.Context, id string, see func(store.Entry)) (stop func(rested bool), err error)

	// Triggers, Trigger, PauseTrigger, ResumeTrigger and RemoveTrigger
	// act on trigger bindings.
	Triggers(ctx context.Context, o triggers.ListOptions) ([]triggers.Trigger, error)
	Trigger(ctx context.Context, id string) (triggers.Trigger, error)
	PauseTrigger(ctx context.Context, id string) (triggers.Trigger, error)
	ResumeTrigger(ctx context.Context, id string) (triggers.Trigger, error)
	RemoveTrigger(ctx context.Context, id string) (removed bool, err error)

	// Doctor runs the checks of the deployment (package doctor): here,
	// or where the server runs; network also calls each model once.
	Doctor(ctx context.Context, network bool) (doctor.Report, error)

	// Agents lists the agents a command may name, by name; Agent
	// describes one as GET /v1/agents/{name} does (an unknown name exits
	// as not found).
	Agents(ctx context.Context) ([]api.Agent, error)
	Agent(ctx context.Context, name string) (api.AgentDetail, error)
	// Preview is the first model request a run of the agent would send,
	// as GET /v1/agents/{name}/preview answers it.
	Preview(ctx context.Context, name string, o hitch.PreviewOptions) (api.AgentPreview, error)

	// Close releases what the backend holds.
	Close()
}

// startParams is what `hitch run` asks of Start.
type startParams struct {
	Agent, Input, ID, Tenant, Instructions string
	Detach                                 bool
}

// wakeParams is what `hitch wake` delivers.
type wakeParams struct {
	Event string
	Data  json.RawMessage
	By    string
}

// runContext is a run's latest model requests and its family's running
// cost, as `runs show` reports them.
type runContext struct {
	Requests   []hitchtype.ContextRequest
	More       bool
	FamilyCost hitch.RunningCost
}

// need says what a command needs of a local backend.
type need int

const (
	// needStore reads: the store must exist; the config is loaded when
	// there is one to load (see openLocal).
	needStore need = iota
	// needRuntime commands a run: the store must exist, and the config
	// is required.
	needRuntime
	// needNew starts or drives runs: the store is created when missing.
	needNew
	// needConfig reads the config's agents: the config is required, and
	// the store is opened for reading when it exists.
	needConfig
)

// verb is what a command's body works with.
type verb struct {
	g   *globals
	b   backend
	out *printer // progress and outcomes, as text or JSON lines
}

// withBackend wraps a command's body with its backend: remote with
// --server, else local as the command needs it. The backend is closed when
// the body returns.
func withBackend(g *globals, n need, fn func(ctx context.Context, v *verb, a []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, a []string) error {
		ctx := cmd.Context()
		v, err := openVerb(ctx, g, n)
		if err != nil {
			return err
		}
		defer v.b.Close()
		return fn(ctx, v, a)
	}
}

func openVerb(ctx context.Context, g *globals, n need) (*verb, error) {
	if g.server != "" {
		r, err := openRemote(g)
		if err != nil {
			return nil, err
		}
		return &verb{g: g, b: r, out: r.out}, nil
	}
	l, err := openLocal(ctx, g, n)
	if err != nil {
		return nil, err
	}
	return &verb{g: g, b: l, out: l.e.out}, nil
}

// follow reads a run a command is about to move on and follows it from
// here: the steps its command leads to print as they are journaled.
func (v *verb) follow(ctx context.Context, id string) (hitch.Run, error) {
	run, err := v.b.Run(ctx, id)
	if err == nil {
		v.out.following(id)
	}
	return run, err
}

// settle follows a run past after until it ends or parks, prints where it
// stands, and turns its status into the exit code.
func (v *verb) settle(ctx context.Context, id string, after int64) error {
	v.out.following(id)
	run, err := v.b.Settle(ctx, id, after)
	if err != nil {
		return err
	}
	v.out.outcome(run)
	return exitFor(run)
}

// printJSON prints one JSON line.
func (v *verb) printJSON(x any) { printJSONLine(v.g, x) }

// printJSONLine prints one JSON line on standard output.
func printJSONLine(g *globals, x any) {
	b, _ := json.Marshal(x)
	fmt.Fprintf(g.stdout, "%s\n", b)
}

// localOnly marks a command that needs the store or the agents in this
// process: with --server it is refused (exit 2) and says why.
func localOnly(cmd *cobra.Command, why string) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annLocalOnly] = why
	return cmd
}

const annLocalOnly = "hitch/local-only"

// refuseRemote refuses a local-only command with --server.
func refuseRemote(cmd *cobra.Command) error {
	why, ok := cmd.Annotations[annLocalOnly]
	if !ok {
		return nil
	}
	return usageError{fmt.Errorf("%s cannot work with --server (%s): run it where the store is, without --server and %s",
		cmd.CommandPath(), why, serverEnv)}
}
