package server

import (
	"context"
	"net/http"
	"reflect"

	"github.com/danielgtaylor/huma/v2"

	"github.com/hitch-dev/hitch/api"
)

// route is one operation of the API and the handler that answers it.
type route struct {
	huma.Operation
	register func(huma.API, huma.Operation)
}

// handler registers h as the handler of an operation.
func handler[I, O any](h func(context.Context, *I) (*O, error)) func(huma.API, huma.Operation) {
	return func(a huma.API, op huma.Operation) { huma.Register(a, op, h) }
}

// body is an answer that is a JSON body.
type body[T any] struct{ Body T }

// reply answers a read with its result as the wire speaks it, or with the
// problem of op's error.
func reply[T, W any](s *Server, op string, v T, err error, wire func(T) W) (*body[W], error) {
	if err != nil {
		return nil, s.fail(op, err)
	}
	return &body[W]{wire(v)}, nil
}

// statusBody is an answer that says with its status whether the request
// created what it answers with (201) or found it made by an earlier one
// (200).
type statusBody[T any] struct {
	Status int
	Body   T
}

func created[T any](isNew bool, v T) *statusBody[T] {
	if isNew {
		return &statusBody[T]{http.StatusCreated, v}
	}
	return &statusBody[T]{http.StatusOK, v}
}

// runPath names a run in a route's path.
type runPath struct {
	ID string `path:"id" maxLength:"128" doc:"The run's id."`
}

// callPath names one call of a run.
type callPath struct {
	ID   string `path:"id" maxLength:"128" doc:"The run's id."`
	Call string `path:"call" maxLength:"256" doc:"The call's id."`
}

// Problems the commands on a run answer with besides the common ones.
var commandErrors = []int{http.StatusNotFound, http.StatusForbidden, http.StatusConflict, http.StatusUnprocessableEntity}

// routes is every operation of the API. The surface matrix
// (surface_test.go) fails for one without its row there.
func (s *Server) routes() []route {
	schema := func(v any) *huma.Schema {
		return s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeOf(v), true, "")
	}
	public := []map[string][]string{}
	return []route{
		// Health, and who a token speaks for.
		{huma.Operation{OperationID: "healthz", Method: http.MethodGet, Path: "/healthz", Tags: []string{"health"},
			Summary: "Liveness: the process serves", Security: public}, handler(s.healthz)},
		{huma.Operation{OperationID: "readyz", Method: http.MethodGet, Path: "/readyz", Tags: []string{"health"},
			Summary: "Readiness: the store answers and the server is not stopping", Security: public,
			Errors: []int{http.StatusServiceUnavailable}}, handler(s.readyz)},
		{huma.Operation{OperationID: "get-me", Method: http.MethodGet, Path: "/v1/me", Tags: []string{"auth"},
			Summary:     "Who the token speaks for: its name, tenant and role",
			Description: "Lets a client offer only what the role may do; the server refuses the rest whatever a client shows.",
		}, handler(s.me)},

		// Runs (runs.go).
		{huma.Operation{OperationID: "start-run", Method: http.MethodPost, Path: "/v1/runs", Tags: []string{"runs"},
			Summary: "Start a run (admin)",
			Description: "Start a run of an agent on an input; this server drives it. With an id, the same id again " +
				"starts nothing: 200 with created false when the input was the same, a conflict problem when it was not. " +
				"A retry of a run still queued (the first start died before it was claimed) drives it. " +
				"With Accept: text/event-stream the answer is the run's event stream, as GET /v1/runs/{id}/events sends it from " +
				"the start: the same status and Location, then one entry event per journal entry and the end event. " +
				"A stream cut short resumes on GET /v1/runs/{id}/events with Last-Event-ID.",
			DefaultStatus: http.StatusCreated,
			Responses:     s.startResponses(),
			Errors:        []int{http.StatusUnprocessableEntity, http.StatusConflict, http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable},
		}, handler(s.startRun)},
		{huma.Operation{OperationID: "fork-run", Method: http.MethodPost, Path: "/v1/runs/{id}/fork", Tags: []string{"runs"},
			Summary: "Fork a run at a journal position (admin)",
			Description: "Creates a run whose history is the run's journal up to at, and drives it. Recorded results are never run " +
				"again; a call started and not settled at at is uncertain in the fork. The fork works on the workspace as it is " +
				"now, not as it was at at. With an id, the same id again creates nothing: 200 with created false for the same " +
				"fork, a conflict problem for another.",
			DefaultStatus: http.StatusCreated,
			Errors:        []int{http.StatusNotFound, http.StatusUnprocessableEntity, http.StatusConflict, http.StatusForbidden, http.StatusServiceUnavailable},
		}, handler(s.forkRun)},
		{huma.Operation{OperationID: "list-runs", Method: http.MethodGet, Path: "/v1/runs", Tags: []string{"runs"},
			Summary: "List the tenant's runs, newest first"}, handler(s.listRunsOp)},
		{huma.Operation{OperationID: "get-run", Method: http.MethodGet, Path: "/v1/runs/{id}", Tags: []string{"runs"},
			Summary: "Read a run", Errors: []int{http.StatusNotFound}}, handler(s.getRun)},
		{huma.Operation{OperationID: "wait-run", Method: http.MethodGet, Path: "/v1/runs/{id}/wait", Tags: []string{"runs"},
			Summary:     "Wait until a run ends or parks (long poll)",
			Description: "Answers the run once it has ended or waits (for an approval or a reconciliation), or as it stands when timeout passes (at most the server's MaxWait).",
			Errors:      []int{http.StatusNotFound},
		}, handler(s.waitRun)},
		{huma.Operation{OperationID: "cancel-run", Method: http.MethodPost, Path: "/v1/runs/{id}/cancel", Tags: []string{"runs"},
			Summary: "Cancel a run and its sub-agents (operator)",
			Description: "Records a durable cancel request and waits (at most the agent's command wait) for the run to end. Cancelling an ended run changes nothing. " +
				"An optional body says why; the run's outcome journals it with who asked (the first request's, when several came).",
			Errors: commandErrors,
		}, handler(s.cancelRun)},
		{huma.Operation{OperationID: "reconcile-run", Method: http.MethodPost, Path: "/v1/runs/{id}/reconcile", Tags: []string{"runs"},
			Summary:     "Settle an uncertain call (operator)",
			Description: "Settles an uncertain call with its confirmed output, or as unconfirmed, and drives the run on.",
			Errors:      commandErrors,
		}, handler(s.reconcileRun)},
		{huma.Operation{OperationID: "wake-run", Method: http.MethodPost, Path: "/v1/runs/{id}/wake", Tags: []string{"runs"},
			Summary:     "Deliver an event to a run's armed wake (operator)",
			Description: "Delivers an event, with optional JSON data, to the wake the run armed for it, and drives the run on. A late, repeated or unawaited event is refused and changes nothing.",
			Errors:      commandErrors,
		}, handler(s.wakeRun)},
		{huma.Operation{OperationID: "complete-call", Method: http.MethodPost, Path: "/v1/runs/{id}/calls/{call}/complete", Tags: []string{"runs"},
			Summary:     "Complete an external call, or release a held one (operator)",
			Description: "Gives a pending external call its result or error, or releases a call held by a hook (execute), and drives the run on. A second completion, or one after the call timed out, is refused and changes nothing.",
			Errors:      commandErrors,
		}, handler(s.completeCall)},
		{huma.Operation{OperationID: "get-call", Method: http.MethodGet, Path: "/v1/runs/{id}/calls/{call}", Tags: []string{"runs"},
			Summary:     "One tool call's lifecycle, from the journal",
			Description: "The tool and its arguments, the decision and an approval's answer, when the body started and on which node, and how it ended. The journal is read backwards from its end to the reply that asked for the call.",
			Errors:      []int{http.StatusNotFound},
		}, handler(s.getCall)},
		{huma.Operation{OperationID: "read-journal", Method: http.MethodGet, Path: "/v1/runs/{id}/journal", Tags: []string{"runs"},
			Summary: "Read a run's journal by position, a page at a time", Errors: []int{http.StatusNotFound}}, handler(s.readJournal)},
		{huma.Operation{OperationID: "count-runs", Method: http.MethodGet, Path: "/v1/runs/counts", Tags: []string{"runs"},
			Summary:     "Count the tenant's runs by status",
			Description: "Counts the runs the list would show with the same filters (agent, creation time, text), by status.",
			Errors:      []int{http.StatusUnprocessableEntity},
		}, handler(s.countRuns)},

		// A run's event streams (events.go).
		{huma.Operation{OperationID: "stream-run", Method: http.MethodGet, Path: "/v1/runs/{id}/events", Tags: []string{"runs"},
			Summary: "Follow a run's journal as server-sent events",
			Description: "One `entry` event per journal entry, its id the entry's position. Last-Event-ID (or ?after=N) " +
				"resumes exactly after that position. The stream ends after the run's terminal entry with an `end` event.",
			Responses: sseResponses,
			Errors:    []int{http.StatusNotFound, http.StatusTooManyRequests, http.StatusUnprocessableEntity},
		}, handler(s.streamRun)},
		{huma.Operation{OperationID: "stream-family", Method: http.MethodGet, Path: "/v1/runs/{id}/family/events", Tags: []string{"runs"},
			Summary: "Follow a whole family's journals (a root run and its sub-agents) as server-sent events",
			Description: "Like a run's stream, over every run of the family of the root run {id}; each event's data names its run. " +
				"The event id is the family cursor: the position reached in each run, as RUN=POS pairs joined by commas. " +
				"Resuming with it continues exactly after every entry already sent. The stream ends when every run of the family has ended.",
			Responses: sseResponses,
			Errors:    []int{http.StatusNotFound, http.StatusTooManyRequests, http.StatusUnprocessableEntity},
		}, handler(s.streamFamily)},

		// Approvals (approvals.go).
		{huma.Operation{OperationID: "list-approvals", Method: http.MethodGet, Path: "/v1/approvals", Tags: []string{"approvals"},
			Summary: "List approval requests waiting for an answer, of the tenant or of one family",
			Errors:  []int{http.StatusNotFound},
		}, handler(s.listApprovals)},
		{huma.Operation{OperationID: "get-approval", Method: http.MethodGet, Path: "/v1/runs/{id}/approvals/{call}", Tags: []string{"approvals"},
			Summary: "Show one approval request while it waits",
			Errors:  []int{http.StatusNotFound, http.StatusGone, http.StatusConflict},
		}, handler(s.getApproval)},
		s.answerRoute(true),
		s.answerRoute(false),

		// Workspaces (workspaces.go).
		{huma.Operation{OperationID: "list-roots", Method: http.MethodGet, Path: "/v1/runs/{id}/workspace", Tags: []string{"workspaces"},
			Summary: "List the roots granted to a run's workspace", Errors: []int{http.StatusNotFound}}, handler(s.listRoots)},
		{huma.Operation{OperationID: "grant-root", Method: http.MethodPost, Path: "/v1/runs/{id}/workspace/grant", Tags: []string{"workspaces"},
			Summary: "Grant a directory to a run's workspace (operator)", Errors: commandErrors}, handler(s.changeRoot(false))},
		{huma.Operation{OperationID: "revoke-root", Method: http.MethodPost, Path: "/v1/runs/{id}/workspace/revoke", Tags: []string{"workspaces"},
			Summary: "Take a granted directory back from a run's workspace (operator)", Errors: commandErrors}, handler(s.changeRoot(true))},

		// Agents (agents.go).
		{huma.Operation{OperationID: "list-agents", Method: http.MethodGet, Path: "/v1/agents", Tags: []string{"agents"},
			Summary: "List the agents this server can start"}, handler(s.listAgents)},
		{huma.Operation{OperationID: "get-agent", Method: http.MethodGet, Path: "/v1/agents/{name}", Tags: []string{"agents"},
			Summary:     "Show one agent's definition",
			Description: "The agent's model, tools, policy rules, limits, family budget and approvers. It never holds a secret: no model credentials or variables, no approver secrets.",
			Errors:      []int{http.StatusNotFound},
		}, handler(s.getAgent)},
		{huma.Operation{OperationID: "preview-agent", Method: http.MethodGet, Path: "/v1/agents/{name}/preview", Tags: []string{"agents"},
			Summary: "Preview the first model request a run of the agent would send",
			Description: "The request built as a run builds it — instructions by layer, the session's history and the input, the tools, " +
				"the answer schema — each part with its estimated tokens against the model's window. No model is called, no hook runs " +
				"and nothing is written.",
			Errors: []int{http.StatusNotFound, http.StatusConflict},
		}, handler(s.previewAgent)},

		// What bounds a run, what it waits on, where its tokens go (budget.go, waits.go, context.go).
		{huma.Operation{OperationID: "get-run-budget", Method: http.MethodGet, Path: "/v1/runs/{id}/budget", Tags: []string{"runs"},
			Summary: "Read what bounds a run and what is left",
			Description: "The family budget the run's root was started with (shared by every run of the family) and the run's own " +
				"limits (model attempts, tokens), each with its limit, what is used and what is left. A counter without a limit is " +
				"not listed; an amount that is not known is null, never 0.",
			Errors: []int{http.StatusNotFound},
		}, handler(s.runBudget)},
		{huma.Operation{OperationID: "get-family-usage", Method: http.MethodGet, Path: "/v1/runs/{id}/family/usage", Tags: []string{"runs"},
			Summary: "Read what a family of runs has used",
			Description: "The usage and cost of the root run {id} and every run below it, summed from their outcomes. A counter " +
				"is null when any run's is, or while a run of the family has not ended.",
			Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity},
		}, handler(s.familyUsage)},
		{huma.Operation{OperationID: "get-run-waits", Method: http.MethodGet, Path: "/v1/runs/{id}/waits", Tags: []string{"runs"},
			Summary: "List what a parked run waits on, and until when",
			Description: "Each thing the run waits on: an awaited event, an external call, a call held by a hook, an approval, its " +
				"sub-agents or an uncertain call, with the call, its tool and the deadline by the store's clock. Empty for a run " +
				"that does not wait.",
			Errors: []int{http.StatusNotFound},
		}, handler(s.runWaits)},
		{huma.Operation{OperationID: "run-context", Method: http.MethodGet, Path: "/v1/runs/{id}/context", Tags: []string{"runs"},
			Summary: "Read where a run's model requests put their tokens, and what its family has cost so far",
			Description: "Each model request's context account (the instruction layers, tool definitions, the transcript by role, " +
				"the compaction summary and the answer schema, estimated; the window it was fitted into; the estimator), " +
				"with the provider's exact usage once the reply came. The same account is data.context of the journal's model.attempt entries.",
			Errors: []int{http.StatusNotFound},
		}, handler(s.runContext)},

		// Sessions (sessions.go).
		{huma.Operation{OperationID: "create-session", Method: http.MethodPost, Path: "/v1/sessions", Tags: []string{"sessions"},
			Summary:       "Create a session, or return the existing one with the id (admin)",
			Description:   "Idempotent by id: the same id again returns the session as it stands (200, created false). 201 when created.",
			DefaultStatus: http.StatusCreated,
			Responses: map[string]*huma.Response{"200": {
				Description: "The id existed: the session is returned as it stands.",
				Content:     map[string]*huma.MediaType{"application/json": {Schema: schema(api.CreatedSession{})}},
			}},
			Errors: []int{http.StatusForbidden, http.StatusConflict, http.StatusUnprocessableEntity},
		}, handler(s.createSession)},
		{huma.Operation{OperationID: "list-sessions", Method: http.MethodGet, Path: "/v1/sessions", Tags: []string{"sessions"},
			Summary: "List the tenant's sessions by id, a page at a time"}, handler(s.listSessions)},
		{huma.Operation{OperationID: "get-session", Method: http.MethodGet, Path: "/v1/sessions/{id}", Tags: []string{"sessions"},
			Summary: "Show one session", Errors: []int{http.StatusNotFound}}, handler(s.getSession)},
		{huma.Operation{OperationID: "send-message", Method: http.MethodPost, Path: "/v1/sessions/{id}/messages", Tags: []string{"sessions"},
			Summary: "Send a user message to a session (admin)",
			Description: "The message is durable when the answer is sent. With an Idempotency-Key header, a retried send " +
				"admits nothing new and answers the first admission with duplicate true (200; 201 for a new admission).",
			DefaultStatus: http.StatusCreated,
			Responses: map[string]*huma.Response{"200": {
				Description: "The Idempotency-Key matched an earlier send: nothing new was admitted.",
				Content:     map[string]*huma.MediaType{"application/json": {Schema: schema(api.Sent{})}},
			}},
			Errors: []int{http.StatusNotFound, http.StatusForbidden, http.StatusUnprocessableEntity},
		}, handler(s.send)},
		{huma.Operation{OperationID: "interrupt-session", Method: http.MethodPost, Path: "/v1/sessions/{id}/interrupt", Tags: []string{"sessions"},
			Summary:     "Interrupt the running submission, if any (operator)",
			Description: "A durable cancel of the running submission's run: it ends aborted and the next queued message starts. Idempotent; an idle session is left as it is.",
			Errors:      []int{http.StatusNotFound, http.StatusForbidden, http.StatusConflict},
		}, handler(s.interruptSession)},
		{huma.Operation{OperationID: "list-queue", Method: http.MethodGet, Path: "/v1/sessions/{id}/queue", Tags: []string{"sessions"},
			Summary: "List the queued messages in the order they will start", Errors: []int{http.StatusNotFound}}, handler(s.listQueue)},
		{huma.Operation{OperationID: "edit-message", Method: http.MethodPost, Path: "/v1/sessions/{id}/queue/{message}/edit", Tags: []string{"sessions"},
			Summary: "Replace the text of a queued message; it keeps its place (admin)", Errors: commandErrors}, handler(s.editMessage)},
		{huma.Operation{OperationID: "remove-message", Method: http.MethodPost, Path: "/v1/sessions/{id}/queue/{message}/remove", Tags: []string{"sessions"},
			Summary: "Take a queued message out of the queue (admin)",
			Errors:  []int{http.StatusNotFound, http.StatusForbidden, http.StatusConflict},
		}, handler(s.removeMessage)},
		{huma.Operation{OperationID: "session-status", Method: http.MethodGet, Path: "/v1/sessions/{id}/status", Tags: []string{"sessions"},
			Summary: "A session's state: its queue, submissions and usage", Errors: []int{http.StatusNotFound}}, handler(s.sessionStatus)},
		{huma.Operation{OperationID: "session-transcript", Method: http.MethodGet, Path: "/v1/sessions/{id}/transcript", Tags: []string{"sessions"},
			Summary: "Read a session's journal by position, a page at a time", Errors: []int{http.StatusNotFound}}, handler(s.sessionTranscript)},
		{huma.Operation{OperationID: "stream-session", Method: http.MethodGet, Path: "/v1/sessions/{id}/events", Tags: []string{"sessions"},
			Summary: "Follow a session's journal as server-sent events",
			Description: "One `entry` event per session journal entry (data: a SessionEntry), its id the entry's position. " +
				"Last-Event-ID (or ?after=N) resumes exactly after that position. A session does not end: the stream stays open, with heartbeats, until the client leaves.",
			Responses: map[string]*huma.Response{"200": {
				Description: "A text/event-stream: one `entry` event per session journal entry (data: a SessionEntry) and heartbeat comments.",
				Content:     map[string]*huma.MediaType{"text/event-stream": {Schema: &huma.Schema{Type: "string", Description: "Server-sent events; see docs/api.md."}}},
			}},
			Errors: []int{http.StatusNotFound, http.StatusTooManyRequests, http.StatusUnprocessableEntity},
		}, handler(s.streamSession)},
		{huma.Operation{OperationID: "session-cost", Method: http.MethodGet, Path: "/v1/sessions/{id}/cost", Tags: []string{"sessions"},
			Summary:     "Read what a session has cost so far",
			Description: "Every submission's run and its sub-agents, the one at work included, summed in USD; usd is null when not priced.",
			Errors:      []int{http.StatusNotFound},
		}, handler(s.sessionCost)},

		// Operations (doctor.go).
		{huma.Operation{OperationID: "get-doctor", Method: http.MethodGet, Path: "/v1/doctor", Tags: []string{"operations"},
			Summary: "Check this deployment: store, durability, commits, clock, nodes, sandbox, secrets, MCP servers, models, disk",
			Description: "Runs hitch doctor's checks where the server runs, as the server is configured, and answers one check a " +
				"finding with its verdict and what to do. For admins of tenant default: the report covers what every tenant " +
				"shares. The commit probe writes a scratch table or file of its own and removes it. See docs/operations.md.",
			Errors: []int{http.StatusForbidden},
		}, handler(s.runDoctor)},
	}
}

// answerRoute is the route that approves, or rejects, an approval request.
func (s *Server) answerRoute(approve bool) route {
	op, verb := "approve", "Approve"
	if !approve {
		op, verb = "reject", "Reject"
	}
	return route{huma.Operation{OperationID: op + "-approval", Method: http.MethodPost, Path: "/v1/runs/{id}/approvals/{call}/" + op, Tags: []string{"approvals"},
		Summary: verb + " an approval request with an approver's credential (operator)",
		Description: "The credential in the body is checked against the run's agent's approvers for the request's requirement, " +
			"as `hitch approvals " + op + "` does; the policy is asked again before a grant takes effect.",
		Errors: []int{http.StatusNotFound, http.StatusGone, http.StatusConflict, http.StatusForbidden, http.StatusUnprocessableEntity},
	}, handler(s.answerApproval(op, approve))}
}
