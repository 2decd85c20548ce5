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
	var out api.StartedRun
	_, err := c.do(ctx, "start run", http.MethodPost, "/v1/runs", nil, in, &out)
	return out, err
}

// ForkRun creates a run whose history is run id's journal up to in.At, and
// drives it on the server. The fork works on the workspace as it is now.
func (c *Client) ForkRun(ctx context.Context, id string, in api.ForkRun) (api.StartedRun, error) {
	var out api.StartedRun
	_, err := c.do(ctx, "fork "+id, http.MethodPost, "/v1/runs/"+esc(id)+"/fork", nil, in, &out)
	return out, err
}

// Run returns one run.
func (c *Client) Run(ctx context.Context, id string) (api.Run, error) {
	var out api.Run
	_, err := c.do(ctx, "get run "+id, http.MethodGet, "/v1/runs/"+esc(id), nil, nil, &out)
	return out, err
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
	var out api.RunPage
	_, err := c.do(ctx, "list runs", http.MethodGet, "/v1/runs", q, nil, &out)
	return out, err
}

// RunCounts counts the token's tenant's runs by status, among those f's
// agent, time and text filters keep (its other fields are not sent).
func (c *Client) RunCounts(ctx context.Context, f RunFilter) (api.RunCounts, error) {
	q := url.Values{}
	f.filters(q)
	var out api.RunCounts
	_, err := c.do(ctx, "count runs", http.MethodGet, "/v1/runs/counts", q, nil, &out)
	return out, err
}

// WaitOnce long-polls a run: it answers once the run has ended or parked
// (waiting), or as it stands after timeout (the server bounds it, 60 s by
// default).
func (c *Client) WaitOnce(ctx context.Context, id string, timeout time.Duration) (api.Run, error) {
	q := url.Values{"timeout": {strconv.Itoa(int(timeout / time.Second))}}
	var out api.Run
	_, err := c.do(ctx, "wait for run "+id, http.MethodGet, "/v1/runs/"+esc(id)+"/wait", q, nil, &out)
	return out, err
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
	var out api.Run
	_, err := c.do(ctx, "cancel "+id, http.MethodPost, "/v1/runs/"+esc(id)+"/cancel", nil, nil, &out)
	return out, err
}

// Reconcile settles an uncertain call of a run.
func (c *Client) Reconcile(ctx context.Context, id string, in api.Reconcile) (api.Run, error) {
	var out api.Run
	_, err := c.do(ctx, "reconcile "+id, http.MethodPost, "/v1/runs/"+esc(id)+"/reconcile", nil, in, &out)
	return out, err
}

// Wake delivers an event to the wake a parked run armed for it, and
// returns the run as it stands after.
func (c *Client) Wake(ctx context.Context, id string, in api.Wake) (api.Run, error) {
	var out api.Run
	_, err := c.do(ctx, "wake "+id, http.MethodPost, "/v1/runs/"+esc(id)+"/wake", nil, in, &out)
	return out, err
}

// CompleteCall gives a pending external call its result (or a failure),
// or releases a call held by a hook, and returns the run as it stands
// after.
func (c *Client) CompleteCall(ctx context.Context, id, call string, in api.CompleteCall) (api.Run, error) {
	var out api.Run
	_, err := c.do(ctx, "complete call "+call+" of "+id, http.MethodPost, "/v1/runs/"+esc(id)+"/calls/"+esc(call)+"/complete", nil, in, &out)
	return out, err
}

// Journal reads a run's journal entries after position after, at most
// limit (0: the server's default, 100).
func (c *Client) Journal(ctx context.Context, id string, after int64, limit int) (api.EntryPage, error) {
	q := url.Values{"after": {itoa(after)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out api.EntryPage
	_, err := c.do(ctx, "read the journal of "+id, http.MethodGet, "/v1/runs/"+esc(id)+"/journal", q, nil, &out)
	return out, err
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
	var out api.ApprovalPage
	_, err := c.do(ctx, "list approvals", http.MethodGet, "/v1/approvals", q, nil, &out)
	return out, err
}

// Approval returns one approval request while it waits.
func (c *Client) Approval(ctx context.Context, runID, call string) (api.Approval, error) {
	var out api.Approval
	_, err := c.do(ctx, "show approval "+call, http.MethodGet, "/v1/runs/"+esc(runID)+"/approvals/"+esc(call), nil, nil, &out)
	return out, err
}

// Approve grants an approval request with an approver's credential.
func (c *Client) Approve(ctx context.Context, runID, call string, cred api.Credential) (api.Run, error) {
	var out api.Run
	_, err := c.do(ctx, "approve "+call, http.MethodPost, "/v1/runs/"+esc(runID)+"/approvals/"+esc(call)+"/approve", nil,
		api.Answer{Credential: cred}, &out)
	return out, err
}

// Reject refuses an approval request; reason is shown to the model.
func (c *Client) Reject(ctx context.Context, runID, call string, cred api.Credential, reason string) (api.Run, error) {
	var out api.Run
	_, err := c.do(ctx, "reject "+call, http.MethodPost, "/v1/runs/"+esc(runID)+"/approvals/"+esc(call)+"/reject", nil,
		api.Answer{Credential: cred, Reason: reason}, &out)
	return out, err
}

// Workspace lists the roots granted to a run's workspace.
func (c *Client) Workspace(ctx context.Context, runID string) (api.Roots, error) {
	var out api.Roots
	_, err := c.do(ctx, "workspace of "+runID, http.MethodGet, "/v1/runs/"+esc(runID)+"/workspace", nil, nil, &out)
	return out, err
}

// Grant grants a root to a run's workspace.
func (c *Client) Grant(ctx context.Context, runID, path string) (api.Roots, error) {
	var out api.Roots
	_, err := c.do(ctx, "grant "+path, http.MethodPost, "/v1/runs/"+esc(runID)+"/workspace/grant", nil, api.Root{Path: path}, &out)
	return out, err
}

// Revoke revokes a root of a run's workspace.
func (c *Client) Revoke(ctx context.Context, runID, path string) (api.Roots, error) {
	var out api.Roots
	_, err := c.do(ctx, "revoke "+path, http.MethodPost, "/v1/runs/"+esc(runID)+"/workspace/revoke", nil, api.Root{Path: path}, &out)
	return out, err
}

// Agents lists the agents the server can start.
func (c *Client) Agents(ctx context.Context) (api.Agents, error) {
	var out api.Agents
	_, err := c.do(ctx, "list agents", http.MethodGet, "/v1/agents", nil, nil, &out)
	return out, err
}

// Agent returns one agent's definition: model, tools, policy, limits,
// budget and approvers (never a secret).
func (c *Client) Agent(ctx context.Context, name string) (api.AgentDetail, error) {
	var out api.AgentDetail
	_, err := c.do(ctx, "get agent "+name, http.MethodGet, "/v1/agents/"+esc(name), nil, nil, &out)
	return out, err
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
	var out api.AgentPreview
	_, err := c.do(ctx, "preview agent "+name, http.MethodGet, "/v1/agents/"+esc(name)+"/preview", q, nil, &out)
	return out, err
}

// CreateSession creates a session, or returns the existing one with in.ID.
func (c *Client) CreateSession(ctx context.Context, in api.CreateSession) (api.CreatedSession, error) {
	var out api.CreatedSession
	_, err := c.do(ctx, "create session", http.MethodPost, "/v1/sessions", nil, in, &out)
	return out, err
}

// Session returns one session.
func (c *Client) Session(ctx context.Context, id string) (api.Session, error) {
	var out api.Session
	_, err := c.do(ctx, "get session "+id, http.MethodGet, "/v1/sessions/"+esc(id), nil, nil, &out)
	return out, err
}

// Sessions lists the tenant's sessions by id, after the cursor after.
func (c *Client) Sessions(ctx context.Context, after string, limit int) (api.SessionPage, error) {
	q := url.Values{}
	set(q, "after", after)
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out api.SessionPage
	_, err := c.do(ctx, "list sessions", http.MethodGet, "/v1/sessions", q, nil, &out)
	return out, err
}

// Send sends a user message to a session. With key set, a retried send
// admits nothing new (Duplicate is set). When Send returns without error
// the message is durable.
func (c *Client) Send(ctx context.Context, sessionID string, in api.Send, key string) (api.Sent, error) {
	var out api.Sent
	_, err := c.do(ctx, "send to "+sessionID, http.MethodPost, "/v1/sessions/"+esc(sessionID)+"/messages", nil, in, &out,
		"Idempotency-Key", key)
	return out, err
}

// Interrupt interrupts a session's running submission, if any.
func (c *Client) Interrupt(ctx context.Context, sessionID string) (api.Session, error) {
	var out api.Session
	_, err := c.do(ctx, "interrupt "+sessionID, http.MethodPost, "/v1/sessions/"+esc(sessionID)+"/interrupt", nil, nil, &out)
	return out, err
}

// Queue lists a session's queued messages in the order they will start.
func (c *Client) Queue(ctx context.Context, sessionID string) (api.Queue, error) {
	var out api.Queue
	_, err := c.do(ctx, "queue of "+sessionID, http.MethodGet, "/v1/sessions/"+esc(sessionID)+"/queue", nil, nil, &out)
	return out, err
}

// Edit replaces the text of a queued message.
func (c *Client) Edit(ctx context.Context, sessionID, messageID, text string) (api.Queue, error) {
	var out api.Queue
	_, err := c.do(ctx, "edit "+messageID, http.MethodPost, "/v1/sessions/"+esc(sessionID)+"/queue/"+esc(messageID)+"/edit", nil,
		api.Edit{Text: text}, &out)
	return out, err
}

// Remove takes a queued message out of the queue.
func (c *Client) Remove(ctx context.Context, sessionID, messageID string) (api.Queue, error) {
	var out api.Queue
	_, err := c.do(ctx, "remove "+messageID, http.MethodPost, "/v1/sessions/"+esc(sessionID)+"/queue/"+esc(messageID)+"/remove", nil, nil, &out)
	return out, err
}

// SessionStatus returns a session's queue, submissions and usage.
func (c *Client) SessionStatus(ctx context.Context, sessionID string) (api.SessionStatus, error) {
	var out api.SessionStatus
	_, err := c.do(ctx, "status of "+sessionID, http.MethodGet, "/v1/sessions/"+esc(sessionID)+"/status", nil, nil, &out)
	return out, err
}

// Transcript reads a session's journal after position after.
func (c *Client) Transcript(ctx context.Context, sessionID string, after int64, limit int) (api.SessionEntryPage, error) {
	q := url.Values{"after": {itoa(after)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out api.SessionEntryPage
	_, err := c.do(ctx, "transcript of "+sessionID, http.MethodGet, "/v1/sessions/"+esc(sessionID)+"/transcript", q, nil, &out)
	return out, err
}

func set(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}
