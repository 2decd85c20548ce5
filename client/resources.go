package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hitch-dev/hitch/api"
)

// StartRun starts a run. With in.ID set, the same id again starts
// nothing: Created is false and SameInput says whether the input matched
// (a different input is an ErrConflict).
func (c *Client) StartRun(ctx context.Context, in api.StartRun) (api.StartedRun, error) {
	return doJSON[api.StartedRun](ctx, c, "start run", http.MethodPost, "/v1/runs", nil, in)
}

// ForkRun creates a run whose history is run id's journal up to in.At, and
// drives it on the server. The fork works on the workspace as it is now.
func (c *Client) ForkRun(ctx context.Context, id string, in api.ForkRun) (api.StartedRun, error) {
	return doJSON[api.StartedRun](ctx, c, "fork "+id, http.MethodPost, "/v1/runs/"+esc(id)+"/fork", nil, in)
}

// Run returns one run.
func (c *Client) Run(ctx context.Context, id string) (api.Run, error) {
	return doJSON[api.Run](ctx, c, "get run "+id, http.MethodGet, "/v1/runs/"+esc(id), nil, nil)
}

// RunFilter filters and pages Runs.
type RunFilter struct {
	Status   []string
	Agent    string
	ParentID string
	RootID   string
	// After is the Next of the previous page.
	After string
	// Limit is 1 to 1000; 0 is the server's default (50).
	Limit int
	// CreatedAfter keeps runs created at or after it, CreatedBefore runs
	// created before it; zero means no bound.
	CreatedAfter, CreatedBefore time.Time
	// Text keeps runs whose id, agent or title (the head of the input)
	// contains it, ignoring ASCII case; at most 200 characters.
	Text string
}

// filters sets the filters the list and the counts share.
func (f RunFilter) filters(q url.Values) {
	set(q, "agent", f.Agent)
	if !f.CreatedAfter.IsZero() {
		q.Set("created_after", f.CreatedAfter.Format(time.RFC3339Nano))
	}
	if !f.CreatedBefore.IsZero() {
		q.Set("created_before", f.CreatedBefore.Format(time.RFC3339Nano))
	}
	set(q, "q", f.Text)
}

// Runs lists the token's tenant's runs, newest first, one page.
func (c *Client) Runs(ctx context.Context, f RunFilter) (api.RunPage, error) {
	q := url.Values{}
	for _, s := range f.Status {
		q.Add("status", s)
	}
	f.filters(q)
	set(q, "parent_id", f.ParentID)
	set(q, "root_id", f.RootID)
	set(q, "after", f.After)
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	return doJSON[api.RunPage](ctx, c, "list runs", http.MethodGet, "/v1/runs", q, nil)
}

// RunCounts counts the token's tenant's runs by status, among those f's
// agent, time and text filters keep (its other fields are not sent).
func (c *Client) RunCounts(ctx context.Context, f RunFilter) (api.RunCounts, error) {
	q := url.Values{}
	f.filters(q)
	return doJSON[api.RunCounts](ctx, c, "count runs", http.MethodGet, "/v1/runs/counts", q, nil)
}

// WaitOnce long-polls a run: it answers once the run has ended or parked
// (waiting), or as it stands after timeout (the server bounds it, 60 s by
// default).
func (c *Client) WaitOnce(ctx context.Context, id string, timeout time.Duration) (api.Run, error) {
	q := url.Values{"timeout": {strconv.Itoa(int(timeout / time.Second))}}
	return doJSON[api.Run](ctx, c, "wait for run "+id, http.MethodGet, "/v1/runs/"+esc(id)+"/wait", q, nil)
}

// Wait long-polls a run until it has ended or parked (status waiting), or
// ctx ends. Right after an approval or a reconciliation the run may still
// read waiting until a runner takes it up: follow its events (Follow) to
// see it go on.
func (c *Client) Wait(ctx context.Context, id string) (api.Run, error) {
	poll := min(60*time.Second, c.timeout/2)
	for {
		r, err := c.WaitOnce(ctx, id, poll)
		if err != nil {
			return r, err
		}
		if r.Status != "queued" && r.Status != "running" {
			return r, nil
		}
		if err := ctx.Err(); err != nil {
			return r, err
		}
	}
}

// Cancel cancels a run durably; cancelling an ended run changes nothing.
func (c *Client) Cancel(ctx context.Context, id string) (api.Run, error) {
	return doJSON[api.Run](ctx, c, "cancel "+id, http.MethodPost, "/v1/runs/"+esc(id)+"/cancel", nil, nil)
}

// Reconcile settles an uncertain call of a run.
func (c *Client) Reconcile(ctx context.Context, id string, in api.Reconcile) (api.Run, error) {
	return doJSON[api.Run](ctx, c, "reconcile "+id, http.MethodPost, "/v1/runs/"+esc(id)+"/reconcile", nil, in)
}

// Wake delivers an event to the wake a parked run armed for it, and
// returns the run as it stands after.
func (c *Client) Wake(ctx context.Context, id string, in api.Wake) (api.Run, error) {
	return doJSON[api.Run](ctx, c, "wake "+id, http.MethodPost, "/v1/runs/"+esc(id)+"/wake", nil, in)
}

// CompleteCall gives a pending external call its result (or a failure),
// or releases a call held by a hook, and returns the run as it stands
// after.
func (c *Client) CompleteCall(ctx context.Context, id, call string, in api.CompleteCall) (api.Run, error) {
	return doJSON[api.Run](ctx, c, "complete call "+call+" of "+id, http.MethodPost, "/v1/runs/"+esc(id)+"/calls/"+esc(call)+"/complete", nil, in)
}

// Journal reads a run's journal entries after position after, at most
// limit (0: the server's default, 100).
func (c *Client) Journal(ctx context.Context, id string, after int64, limit int) (api.EntryPage, error) {
	q := url.Values{"after": {itoa(after)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return doJSON[api.EntryPage](ctx, c, "read the journal of "+id, http.MethodGet, "/v1/runs/"+esc(id)+"/journal", q, nil)
}

// Approvals lists approval requests waiting for an answer, of the tenant
// or of the family rootID.
func (c *Client) Approvals(ctx context.Context, rootID, after string, limit int) (api.ApprovalPage, error) {
	q := url.Values{}
	set(q, "root_id", rootID)
	set(q, "after", after)
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return doJSON[api.ApprovalPage](ctx, c, "list approvals", http.MethodGet, "/v1/approvals", q, nil)
}

// Approval returns one approval request while it waits.
func (c *Client) Approval(ctx context.Context, runID, call string) (api.Approval, error) {
	return doJSON[api.Approval](ctx, c, "show approval "+call, http.MethodGet, "/v1/runs/"+esc(runID)+"/approvals/"+esc(call), nil, nil)
}

// Approve grants an approval request with an approver's credential.
func (c *Client) Approve(ctx context.Context, runID, call string, cred api.Credential) (api.Run, error) {
	return doJSON[api.Run](ctx, c, "approve "+call, http.MethodPost, "/v1/runs/"+esc(runID)+"/approvals/"+esc(call)+"/approve", nil,
		api.Answer{Credential: cred})
}

// Reject refuses an approval request; reason is shown to the model.
func (c *Client) Reject(ctx context.Context, runID, call string, cred api.Credential, reason string) (api.Run, error) {
	return doJSON[api.Run](ctx, c, "reject "+call, http.MethodPost, "/v1/runs/"+esc(runID)+"/approvals/"+esc(call)+"/reject", nil,
		api.Answer{Credential: cred, Reason: reason})
}

// Workspace lists the roots granted to a run's workspace.
func (c *Client) Workspace(ctx context.Context, runID string) (api.Roots, error) {
	return doJSON[api.Roots](ctx, c, "workspace of "+runID, http.MethodGet, "/v1/runs/"+esc(runID)+"/workspace", nil, nil)
}

// Grant grants a root to a run's workspace.
func (c *Client) Grant(ctx context.Context, runID, path string) (api.Roots, error) {
	return doJSON[api.Roots](ctx, c, "grant "+path, http.MethodPost, "/v1/runs/"+esc(runID)+"/workspace/grant", nil, api.Root{Path: path})
}

// Revoke revokes a root of a run's workspace.
func (c *Client) Revoke(ctx context.Context, runID, path string) (api.Roots, error) {
	return doJSON[api.Roots](ctx, c, "revoke "+path, http.MethodPost, "/v1/runs/"+esc(runID)+"/workspace/revoke", nil, api.Root{Path: path})
}

// Agents lists the agents the server can start.
func (c *Client) Agents(ctx context.Context) (api.Agents, error) {
	return doJSON[api.Agents](ctx, c, "list agents", http.MethodGet, "/v1/agents", nil, nil)
}

// Agent returns one agent's definition: model, tools, policy, limits,
// budget and approvers (never a secret).
func (c *Client) Agent(ctx context.Context, name string) (api.AgentDetail, error) {
	return doJSON[api.AgentDetail](ctx, c, "get agent "+name, http.MethodGet, "/v1/agents/"+esc(name), nil, nil)
}

// PreviewParams say which run Client.Preview shows the first request of:
// its input, the caller's instructions, and a session whose next
// submission it would be (empty: none).
type PreviewParams struct {
	Input, Instructions, Session string
}

// Preview returns the first model request a run of the agent would send,
// each part labelled with its layer and estimated against the window. The
// server calls no model and runs no hook.
func (c *Client) Preview(ctx context.Context, name string, p PreviewParams) (api.AgentPreview, error) {
	q := url.Values{}
	if p.Input != "" {
		q.Set("input", p.Input)
	}
	if p.Instructions != "" {
		q.Set("instructions", p.Instructions)
	}
	if p.Session != "" {
		q.Set("session", p.Session)
	}
	return doJSON[api.AgentPreview](ctx, c, "preview agent "+name, http.MethodGet, "/v1/agents/"+esc(name)+"/preview", q, nil)
}

// CreateSession creates a session, or returns the existing one with in.ID.
func (c *Client) CreateSession(ctx context.Context, in api.CreateSession) (api.CreatedSession, error) {
	return doJSON[api.CreatedSession](ctx, c, "create session", http.MethodPost, "/v1/sessions", nil, in)
}

// Session returns one session.
func (c *Client) Session(ctx context.Context, id string) (api.Session, error) {
	return doJSON[api.Session](ctx, c, "get session "+id, http.MethodGet, "/v1/sessions/"+esc(id), nil, nil)
}

// Sessions lists the tenant's sessions by id, after the cursor after.
func (c *Client) Sessions(ctx context.Context, after string, limit int) (api.SessionPage, error) {
	q := url.Values{}
	set(q, "after", after)
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return doJSON[api.SessionPage](ctx, c, "list sessions", http.MethodGet, "/v1/sessions", q, nil)
}

// Send sends a user message to a session. With key set, a retried send
// admits nothing new (Duplicate is set). When Send returns without error
// the message is durable.
func (c *Client) Send(ctx context.Context, sessionID string, in api.Send, key string) (api.Sent, error) {
	return doJSON[api.Sent](ctx, c, "send to "+sessionID, http.MethodPost, "/v1/sessions/"+esc(sessionID)+"/messages", nil, in,
		"Idempotency-Key", key)
}

// Interrupt interrupts a session's running submission, if any.
func (c *Client) Interrupt(ctx context.Context, sessionID string) (api.Session, error) {
	return doJSON[api.Session](ctx, c, "interrupt "+sessionID, http.MethodPost, "/v1/sessions/"+esc(sessionID)+"/interrupt", nil, nil)
}

// Queue lists a session's queued messages in the order they will start.
func (c *Client) Queue(ctx context.Context, sessionID string) (api.Queue, error) {
	return doJSON[api.Queue](ctx, c, "queue of "+sessionID, http.MethodGet, "/v1/sessions/"+esc(sessionID)+"/queue", nil, nil)
}

// Edit replaces the text of a queued message.
func (c *Client) Edit(ctx context.Context, sessionID, messageID, text string) (api.Queue, error) {
	return doJSON[api.Queue](ctx, c, "edit "+messageID, http.MethodPost, "/v1/sessions/"+esc(sessionID)+"/queue/"+esc(messageID)+"/edit", nil,
		api.Edit{Text: text})
}

// Remove takes a queued message out of the queue.
func (c *Client) Remove(ctx context.Context, sessionID, messageID string) (api.Queue, error) {
	return doJSON[api.Queue](ctx, c, "remove "+messageID, http.MethodPost, "/v1/sessions/"+esc(sessionID)+"/queue/"+esc(messageID)+"/remove", nil, nil)
}

// SessionStatus returns a session's queue, submissions and usage.
func (c *Client) SessionStatus(ctx context.Context, sessionID string) (api.SessionStatus, error) {
	return doJSON[api.SessionStatus](ctx, c, "status of "+sessionID, http.MethodGet, "/v1/sessions/"+esc(sessionID)+"/status", nil, nil)
}

// Transcript reads a session's journal after position after.
func (c *Client) Transcript(ctx context.Context, sessionID string, after int64, limit int) (api.SessionEntryPage, error) {
	q := url.Values{"after": {itoa(after)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return doJSON[api.SessionEntryPage](ctx, c, "transcript of "+sessionID, http.MethodGet, "/v1/sessions/"+esc(sessionID)+"/transcript", q, nil)
}

func set(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}
