// Package mcpserver offers a hitch runtime to MCP clients — an IDE
// assistant, another agent — as a handful of tools: start a run, wait for
// it, read its status and usage, cancel it, list and answer approval
// requests. The work handed over this way is durable and decided by the
// agent's policy like any other run: the MCP client asks, the runtime keeps
// the journal.
//
// The server is a client of the root package only, and reaches the runtime
// through one principal's view of it (hitch.Scope): `hitch mcp` serves the
// local user's, of every tenant, on standard input and output; hitch serve
// mounts one per token at /mcp, so each token reaches its tenant's runs
// only and may do what its role may. A refused call is a tool error whose
// text repeats nothing the caller sent.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/hitchtype"
)

// DefaultMaxWait bounds one wait_run call; a client that wants longer calls
// again.
const DefaultMaxWait = 60 * time.Second

// Options configure a server.
type Options struct {
	// Scope is the view of the runtime the tools reach it through: its
	// principal's tenant and role decide what they see and may do.
	// Required.
	Scope *hitch.Scope
	// Agents are the agents a client may start, by name. Required.
	Agents []*hitch.Agent
	// Credential, when set, is the approver identity this server answers
	// approval requests with; without it answer_approval is refused.
	Credential *approval.Credential
	// MaxWait bounds one wait_run call. Default DefaultMaxWait.
	MaxWait time.Duration
	// Version is reported to clients.
	Version string
}

type server struct {
	opts   Options
	agents map[string]*hitch.Agent
}

// New returns an MCP server over the runtime.
func New(opts Options) (*mcp.Server, error) {
	if opts.Scope == nil {
		return nil, errors.New("mcp server: Options.Scope is required")
	}
	if len(opts.Agents) == 0 {
		return nil, errors.New("mcp server: Options.Agents is empty: there is nothing to start")
	}
	if opts.MaxWait == 0 {
		opts.MaxWait = DefaultMaxWait
	}
	if opts.MaxWait < 0 {
		return nil, fmt.Errorf("mcp server: Options.MaxWait %s: want more than 0", opts.MaxWait)
	}
	s := &server{opts: opts, agents: map[string]*hitch.Agent{}}
	for _, a := range opts.Agents {
		if a == nil {
			return nil, errors.New("mcp server: Options.Agents holds nil")
		}
		s.agents[a.Name()] = a // the last version given wins
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "hitch", Version: cmpOr(opts.Version, "dev")}, nil)
	mcp.AddTool(srv, &mcp.Tool{
		Name: "start_run",
		Description: "Start a durable run of one of this server's agents on an input. Returns at once with the run's id; " +
			"use wait_run to wait for its end. Giving an id makes a retried start idempotent. Agents: " + s.agentList(),
	}, s.startRun)
	mcp.AddTool(srv, &mcp.Tool{
		Name: "wait_run",
		Description: fmt.Sprintf("Wait until a run ends or parks (waiting for an approval or a reconciliation), "+
			"at most timeout_seconds (at most %d); returns the run as it then stands.", int(opts.MaxWait.Seconds())),
	}, s.waitRun)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "run_status",
		Description: "Read a run: status, answer or failure, usage and cost, and the approval requests it waits for.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, s.runStatus)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "cancel_run",
		Description: "Cancel a run durably (and its sub-agents). Idempotent: cancelling an ended run changes nothing.",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true},
	}, s.cancelRun)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "list_approvals",
		Description: "List the approval requests waiting for an answer, of one run's family or of all runs.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, s.listApprovals)
	mcp.AddTool(srv, &mcp.Tool{
		Name: "answer_approval",
		Description: "Approve or reject one approval request with this server's approver identity; the policy is asked " +
			"again before a grant takes effect. A rejection's reason is shown to the run's model.",
	}, s.answerApproval)
	return srv, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (s *server) agentList() string {
	names := make([]string, 0, len(s.agents))
	for n := range s.agents {
		names = append(names, n)
	}
	sort.Strings(names)
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// StartIn are start_run's arguments.
type StartIn struct {
	Agent string `json:"agent" jsonschema:"the agent's name"`
	Input string `json:"input" jsonschema:"the task for the agent"`
	ID    string `json:"id,omitempty" jsonschema:"a caller-chosen run id; the same id again starts nothing new"`
}

// StartOut is start_run's answer.
type StartOut struct {
	RunID     string `json:"run_id"`
	Created   bool   `json:"created"`
	SameInput bool   `json:"same_input"`
	Status    string `json:"status"`
}

func (s *server) startRun(ctx context.Context, _ *mcp.CallToolRequest, in StartIn) (*mcp.CallToolResult, StartOut, error) {
	if err := s.opts.Scope.Can("Start"); err != nil {
		return nil, StartOut{}, refused(err)
	}
	a, ok := s.agents[in.Agent]
	if !ok {
		return nil, StartOut{}, fmt.Errorf("agent: not offered here; agents: %s", s.agentList())
	}
	if in.Input == "" {
		return nil, StartOut{}, errors.New("input is empty")
	}
	var opts []hitch.StartOption
	if in.ID != "" {
		opts = append(opts, hitch.WithID(in.ID))
	}
	res, err := s.opts.Scope.Start(ctx, a, in.Input, opts...)
	if err != nil {
		return nil, StartOut{}, refused(err)
	}
	return nil, StartOut{RunID: res.Run.ID, Created: res.Created, SameInput: res.SameInput, Status: string(res.Run.Status)}, nil
}

// RunIn names a run.
type RunIn struct {
	RunID string `json:"run_id"`
}

// WaitIn are wait_run's arguments.
type WaitIn struct {
	RunID          string `json:"run_id"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"how long to wait; 0 means the server's longest"`
}

// RunView is what the tools say of a run.
type RunView struct {
	RunID    string             `json:"run_id"`
	Agent    string             `json:"agent"`
	Status   string             `json:"status"`
	Done     bool               `json:"done"`
	Answer   string             `json:"answer,omitempty"`
	Reason   string             `json:"reason,omitempty"`
	Error    string             `json:"error,omitempty"`
	Usage    *hitchtype.Usage   `json:"usage,omitempty"`
	CostUSD  *float64           `json:"cost_usd,omitempty"`
	Waiting  []ApprovalView     `json:"waiting_for_approval,omitempty"`
	Position int64              `json:"journal_position"`
	Outcome  *hitchtype.Outcome `json:"-"`
}

// ApprovalView is one request waiting for an answer.
type ApprovalView struct {
	RunID       string     `json:"run_id"`
	Call        string     `json:"call"`
	Tool        string     `json:"tool"`
	Arguments   string     `json:"arguments"`
	Requirement string     `json:"requirement"`
	Reason      string     `json:"reason,omitempty"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
}

func (s *server) view(ctx context.Context, run hitch.Run) (RunView, error) {
	v := RunView{RunID: run.ID, Agent: run.Agent, Status: string(run.Status), Done: run.Status.Terminal(), Position: run.Position}
	if o := run.Outcome; o != nil {
		v.Answer, v.Reason, v.Error, v.CostUSD = o.Answer, o.Reason, o.Error, o.CostUSD
		u := o.Usage
		v.Usage = &u
	}
	if run.Status == hitchtype.StatusWaiting {
		ps, err := s.pending(ctx, run.RootID)
		if err != nil {
			return v, err
		}
		for _, p := range ps {
			if p.RunID == run.ID {
				v.Waiting = append(v.Waiting, p)
			}
		}
	}
	return v, nil
}

func (s *server) pending(ctx context.Context, rootID string) ([]ApprovalView, error) {
	var ps []hitch.PendingApproval
	for after := ""; ; {
		page, next, err := s.opts.Scope.PendingApprovals(ctx, hitch.PendingApprovalsParams{RootID: rootID, After: after, Limit: hitch.MaxPageLimit})
		if err != nil {
			return nil, refused(err)
		}
		ps = append(ps, page...)
		if after = next; after == "" {
			break
		}
	}
	out := make([]ApprovalView, 0, len(ps))
	for _, p := range ps {
		out = append(out, ApprovalView{RunID: p.RunID, Call: p.Call, Tool: p.Tool, Arguments: string(p.Arguments),
			Requirement: p.Requirement, Reason: p.Reason, ExpiresAt: p.ExpiresAt})
	}
	return out, nil
}

func (s *server) waitRun(ctx context.Context, _ *mcp.CallToolRequest, in WaitIn) (*mcp.CallToolResult, RunView, error) {
	wait := s.opts.MaxWait
	if in.TimeoutSeconds < 0 {
		return nil, RunView{}, fmt.Errorf("timeout_seconds %d: want 0 or more", in.TimeoutSeconds)
	}
	if d := time.Duration(in.TimeoutSeconds) * time.Second; d > 0 && d < wait {
		wait = d
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	run, err := s.opts.Scope.Await(wctx, in.RunID)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		// Still working: say where it stands.
		run, err = s.opts.Scope.Get(ctx, in.RunID)
	}
	return s.answer(ctx, run, err)
}

func (s *server) runStatus(ctx context.Context, _ *mcp.CallToolRequest, in RunIn) (*mcp.CallToolResult, RunView, error) {
	run, err := s.opts.Scope.Get(ctx, in.RunID)
	return s.answer(ctx, run, err)
}

func (s *server) cancelRun(ctx context.Context, _ *mcp.CallToolRequest, in RunIn) (*mcp.CallToolResult, RunView, error) {
	run, err := s.opts.Scope.Cancel(ctx, in.RunID)
	return s.answer(ctx, run, err)
}

// answer is a run tool's answer: the run as it stands, or the refusal of
// err, the error of the call that read it.
func (s *server) answer(ctx context.Context, run hitch.Run, err error) (*mcp.CallToolResult, RunView, error) {
	if err != nil {
		return nil, RunView{}, refused(err)
	}
	v, err := s.view(ctx, run)
	return nil, v, err
}

// ListIn are list_approvals' arguments.
type ListIn struct {
	RunID string `json:"run_id,omitempty" jsonschema:"only this run's family (its root and sub-agents)"`
}

// ListOut is list_approvals' answer.
type ListOut struct {
	Approvals []ApprovalView `json:"approvals"`
}

func (s *server) listApprovals(ctx context.Context, _ *mcp.CallToolRequest, in ListIn) (*mcp.CallToolResult, ListOut, error) {
	root := ""
	if in.RunID != "" {
		run, err := s.opts.Scope.Get(ctx, in.RunID)
		if err != nil {
			return nil, ListOut{}, refused(err)
		}
		root = run.RootID
	}
	ps, err := s.pending(ctx, root)
	return nil, ListOut{Approvals: ps}, err
}

// AnswerIn are answer_approval's arguments.
type AnswerIn struct {
	RunID   string `json:"run_id"`
	Call    string `json:"call"`
	Approve bool   `json:"approve" jsonschema:"true grants the request, false rejects it"`
	Reason  string `json:"reason,omitempty" jsonschema:"why, shown to the run's model on a rejection"`
}

func (s *server) answerApproval(ctx context.Context, _ *mcp.CallToolRequest, in AnswerIn) (*mcp.CallToolResult, RunView, error) {
	if err := s.opts.Scope.Can("AnswerApproval"); err != nil {
		return nil, RunView{}, refused(err)
	}
	if s.opts.Credential == nil {
		return nil, RunView{}, errors.New("this server has no approver identity: start it with a credential to answer requests")
	}
	a := hitch.ApprovalAnswer{Approve: in.Approve, Credential: *s.opts.Credential, Reason: in.Reason}
	if err := s.opts.Scope.AnswerApproval(ctx, in.RunID, in.Call, a); err != nil {
		return nil, RunView{}, refused(err)
	}
	run, err := s.opts.Scope.Get(ctx, in.RunID)
	return s.answer(ctx, run, err)
}

// refused is what a tool tells its caller of an error: the runtime's
// refusal, whose text is fixed (hitch.Refusal), or "internal error" — never
// err's own text, which names the ids and texts the caller sent.
func refused(err error) error {
	if r := hitch.Refusal(err); r != nil {
		return r
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return errors.New("the call ran out of time")
	}
	return errors.New("internal error")
}
