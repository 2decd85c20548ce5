package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
)

func (s *Server) getRun(ctx context.Context, in *runPath) (*body[api.Run], error) {
	run, err := s.scope(ctx).Get(ctx, in.ID)
	if err != nil {
		return nil, s.fail("get run", err)
	}
	return &body[api.Run]{s.withWaiting(ctx, wireRun(run))}, nil
}

func (s *Server) cancelRun(ctx context.Context, in *struct {
	ID   string `path:"id" maxLength:"128" doc:"The run's id."`
	Body *api.Cancel
}) (*body[api.Run], error) {
	var b api.Cancel
	if in.Body != nil {
		b = *in.Body
	}
	opts := []hitch.CancelOption{hitch.CancelReason(strings.TrimSpace(b.Reason))}
	if b.By != "" {
		opts = append(opts, hitch.CancelBy(b.By))
	}
	run, err := s.scope(ctx).Cancel(ctx, in.ID, opts...)
	return reply(s, "cancel", run, err, wireRun)
}

func (s *Server) reconcileRun(ctx context.Context, in *struct {
	ID   string `path:"id" maxLength:"128" doc:"The run's id."`
	Body api.Reconcile
}) (*body[api.Run], error) {
	if err := s.can(ctx, "Reconcile"); err != nil {
		return nil, err
	}
	if given := btoi(in.Body.Output != "") + btoi(in.Body.Error != "") + btoi(in.Body.Unconfirmed); given != 1 {
		return nil, invalid("body.output", "give one of output, error or unconfirmed: true")
	}
	rec := hitch.Reconciliation{Call: in.Body.Call, Output: in.Body.Output, Unconfirmed: in.Body.Unconfirmed, Error: in.Body.Error, By: in.Body.By}
	if err := s.scope(ctx).Reconcile(ctx, in.ID, rec); err != nil {
		return nil, s.fail("reconcile", err)
	}
	return s.runAfter(ctx, in.ID)
}

func (s *Server) wakeRun(ctx context.Context, in *struct {
	ID   string `path:"id" maxLength:"128" doc:"The run's id."`
	Body api.Wake
}) (*body[api.Run], error) {
	if err := s.scope(ctx).Wake(ctx, in.ID, in.Body.Event, in.Body.Data, in.Body.By); err != nil {
		return nil, s.fail("wake", err)
	}
	return s.runAfter(ctx, in.ID)
}

func (s *Server) completeCall(ctx context.Context, in *struct {
	ID   string `path:"id" maxLength:"128" doc:"The run's id."`
	Call string `path:"call" maxLength:"128" doc:"The call's id."`
	Body api.CompleteCall
}) (*body[api.Run], error) {
	if err := s.can(ctx, "CompleteCall"); err != nil {
		return nil, err
	}
	if in.Body.Output != "" && in.Body.Error != "" {
		return nil, invalid("body.error", "give output or error, not both")
	}
	if !in.Body.Execute && in.Body.Output == "" && in.Body.Error == "" {
		return nil, invalid("body.output", "give output, error or execute: true")
	}
	c := hitch.Completion{Call: in.Call, Output: in.Body.Output, Error: in.Body.Error, Execute: in.Body.Execute, By: in.Body.By}
	if err := s.scope(ctx).CompleteCall(ctx, in.ID, c); err != nil {
		return nil, s.fail("complete call", err)
	}
	return s.runAfter(ctx, in.ID)
}

func (s *Server) getCall(ctx context.Context, in *struct {
	ID   string `path:"id" maxLength:"128" doc:"The run's id."`
	Call string `path:"call" maxLength:"256" doc:"The call's id: t<turn>c<n>."`
}) (*body[api.Call], error) {
	c, err := s.scope(ctx).Call(ctx, in.ID, in.Call)
	return reply(s, "read call", c, err, wireCall)
}

// startResponses documents a start's answers: the run as JSON, or with
// Accept: text/event-stream its event stream, each with the run's
// Location.
func (s *Server) startResponses() map[string]*huma.Response {
	started := s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeOf(api.StartedRun{}), true, "")
	answer := func(desc string) *huma.Response {
		return &huma.Response{Description: desc,
			Headers: map[string]*huma.Param{"Location": {Description: "The run's path: /v1/runs/{id}.", Schema: &huma.Schema{Type: "string"}}},
			Content: map[string]*huma.MediaType{
				"application/json":  {Schema: started},
				"text/event-stream": sseResponses["200"].Content["text/event-stream"],
			}}
	}
	return map[string]*huma.Response{
		"201": answer("The run was created. With Accept: text/event-stream, its event stream from its first entry."),
		"200": answer("The id existed with the same agent and input: nothing was started. With Accept: text/event-stream, that run's event stream from its first entry."),
	}
}

// startIn is a start's request.
type startIn struct {
	Accept string `header:"Accept" maxLength:"1024" doc:"text/event-stream: answer with the run's event stream instead of the run."`
	Body   api.StartRun
}

// startOut is a start's answer: the run's path, then the run as JSON or
// its event stream.
type startOut struct {
	Location string `header:"Location"`
	Body     func(huma.Context)
}

// wantsStream reports whether an Accept header asks for an event stream.
func wantsStream(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		mt, _, _ := strings.Cut(part, ";")
		if strings.EqualFold(strings.TrimSpace(mt), "text/event-stream") {
			return true
		}
	}
	return false
}

func (s *Server) startRun(ctx context.Context, in *startIn) (*startOut, error) {
	if err := s.can(ctx, "Start"); err != nil {
		return nil, err
	}
	if s.stopping.Load() {
		return nil, api.NewProblem(api.TypeUnavailable, "the server is stopping: start the run on another node")
	}
	b := in.Body
	a, ok := s.agents[b.Agent]
	if !ok {
		return nil, invalid("body.agent", "is not an agent of this server (GET /v1/agents lists them)")
	}
	if strings.TrimSpace(b.Input) == "" {
		return nil, invalid("body.input", "is blank")
	}
	var opts []hitch.StartOption
	if b.ID != "" {
		if err := hitch.CheckRunID(b.ID); err != nil {
			return nil, invalid("body.id", "want 1 to %d letters, digits and . _ : -", hitch.MaxRunIDBytes)
		}
		opts = append(opts, hitch.WithID(b.ID))
	}
	if b.Instructions != "" {
		opts = append(opts, hitch.WithInstructions(b.Instructions))
	}
	if len(b.Metadata) > 0 {
		if raw, err := json.Marshal(b.Metadata); err != nil || len(raw) > hitch.MaxMetadataBytes {
			return nil, invalid("body.metadata", "at most %d bytes as JSON", hitch.MaxMetadataBytes)
		}
		opts = append(opts, hitch.WithMetadata(b.Metadata))
	}
	stream := wantsStream(in.Accept)
	release := func() {}
	if stream {
		// Counted before the start: a refused stream starts nothing.
		var err error
		if release, err = s.openStream(ctx); err != nil {
			return nil, err
		}
	}
	sc := s.scope(ctx)
	res, err := sc.Start(ctx, a, b.Input, opts...)
	if err != nil {
		release()
		return nil, s.fail("start", err)
	}
	out, err := started(res, "a run with this id exists with another agent or input")
	if err != nil {
		release()
		return nil, err
	}
	loc := "/v1/runs/" + url.PathEscape(res.Run.ID)
	if !stream {
		return &startOut{Location: loc, Body: func(hctx huma.Context) {
			hctx.SetHeader("Content-Type", "application/json")
			hctx.SetStatus(out.Status)
			_ = s.api.Marshal(hctx.BodyWriter(), "application/json", out.Body)
		}}, nil
	}
	return &startOut{Location: loc, Body: func(hctx huma.Context) {
		defer release()
		f := &follower{s: s, sc: sc, ctx: hctx.Context(), status: out.Status}
		f.follow(hctx, res.Run.ID, 0)
	}}, nil
}

// started answers a start or a fork: 201 with the new run, 200 with the
// run an earlier request with the same id made, or conflict (its text)
// when that id holds another run.
func started(res hitch.StartResult, conflict string) (*statusBody[api.StartedRun], error) {
	if !res.Created && !res.SameInput {
		return nil, api.NewProblem(api.TypeConflict, conflict)
	}
	return created(res.Created, api.StartedRun{Run: wireRun(res.Run), Created: res.Created, SameInput: res.SameInput}), nil
}

func (s *Server) forkRun(ctx context.Context, in *struct {
	ID   string `path:"id" maxLength:"128" doc:"The run to fork."`
	Body api.ForkRun
}) (*statusBody[api.StartedRun], error) {
	if err := s.can(ctx, "Fork"); err != nil {
		return nil, err
	}
	if s.stopping.Load() {
		return nil, api.NewProblem(api.TypeUnavailable, "the server is stopping: fork the run on another node")
	}
	b := in.Body
	o := hitch.ForkOptions{ID: b.ID, Version: b.Version, Instructions: b.Instructions, Model: b.Model, Message: b.Message}
	if b.ID != "" && hitch.CheckRunID(b.ID) != nil {
		return nil, invalid("body.id", "want 1 to %d letters, digits and . _ : -", hitch.MaxRunIDBytes)
	}
	if b.Reply != "" {
		o.Reply = &model.Reply{Text: b.Reply}
	}
	res, err := s.scope(ctx).Fork(ctx, in.ID, b.At, o)
	if errors.Is(err, hitch.ErrUnknownModel) {
		return nil, invalid("body.model", "%s: no agent of this server answers with a model of that name (or two different ones do)", hitch.ErrUnknownModel)
	}
	if err != nil {
		return nil, s.fail("fork", err)
	}
	return started(res, "a run with this id exists and is not this fork")
}

type listRunsIn struct {
	Status   []string `query:"status" enum:"queued,running,waiting,completed,failed,cancelled,answer_invalid,budget_exhausted" doc:"Only runs with one of these statuses, comma-separated."`
	Agent    string   `query:"agent" maxLength:"64" doc:"Only runs of this agent."`
	ParentID string   `query:"parent_id" maxLength:"128" doc:"Only the children of this run."`
	RootID   string   `query:"root_id" maxLength:"128" doc:"Only this family: a root run and its descendants."`
	After    string   `query:"after" maxLength:"512" doc:"The cursor the previous page returned."`
	Limit    int      `query:"limit" minimum:"1" maximum:"1000" default:"50" doc:"Runs per page."`
	// The filters the counts share (counts.go).
	CreatedAfter  time.Time `query:"created_after" doc:"Only runs created at or after this time (RFC 3339)."`
	CreatedBefore time.Time `query:"created_before" doc:"Only runs created before this time (RFC 3339)."`
	Q             string    `query:"q" maxLength:"200" doc:"Only runs whose id, agent or title (the head of the input) contains this text, ignoring ASCII case."`
	Reason        []string  `query:"reason" maxItems:"16" doc:"Only runs whose outcome's reason is one of these, comma-separated (max_turns, cancelled, ...); none stands for a run without one (completed with its answer, or not ended)."`
}

func (s *Server) listRunsOp(ctx context.Context, in *listRunsIn) (*body[api.RunPage], error) {
	rp := hitch.RunsParams{Agent: in.Agent, ParentID: in.ParentID, RootID: in.RootID, After: in.After, Limit: in.Limit}
	if err := applyFilters(&rp, in.CreatedAfter, in.CreatedBefore, in.Q); err != nil {
		return nil, err
	}
	for _, st := range in.Status {
		rp.Statuses = append(rp.Statuses, hitchtype.Status(st))
	}
	rp.Reasons = reasons(in.Reason)
	runs, next, err := s.scope(ctx).Runs(ctx, rp)
	if err != nil {
		return nil, s.fail("list runs", err)
	}
	page := api.RunPage{Runs: make([]api.Run, 0, len(runs)), Next: next}
	for _, r := range runs {
		page.Runs = append(page.Runs, s.withWaiting(ctx, wireRun(r)))
	}
	return &body[api.RunPage]{page}, nil
}

func (s *Server) waitRun(ctx context.Context, in *struct {
	ID      string `path:"id" maxLength:"128" doc:"The run's id."`
	Timeout int    `query:"timeout" minimum:"0" maximum:"3600" default:"30" doc:"Seconds to wait at most; the server bounds it by its MaxWait."`
}) (*body[api.Run], error) {
	sc := s.scope(ctx)
	if _, err := sc.Get(ctx, in.ID); err != nil {
		return nil, s.fail("wait", err)
	}
	wait := min(time.Duration(in.Timeout)*time.Second, s.cfg.Limits.MaxWait)
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	run, err := sc.Await(wctx, in.ID)
	if err != nil {
		if wctx.Err() == nil || ctx.Err() != nil {
			return nil, s.fail("wait", err)
		}
		if run, err = sc.Get(ctx, in.ID); err != nil {
			return nil, s.fail("wait", err)
		}
	}
	return &body[api.Run]{wireRun(run)}, nil
}

func (s *Server) readJournal(ctx context.Context, in *struct {
	ID    string `path:"id" maxLength:"128" doc:"The run's id."`
	After int64  `query:"after" minimum:"0" doc:"Entries after this position."`
	Limit int    `query:"limit" minimum:"1" maximum:"1000" default:"100" doc:"Entries per page."`
}) (*body[api.EntryPage], error) {
	es, err := s.scope(ctx).Journal(ctx, in.ID, in.After, in.Limit)
	if err != nil {
		return nil, s.fail("read journal", err)
	}
	page := api.EntryPage{Entries: make([]api.Entry, 0, len(es))}
	for _, e := range es {
		page.Entries = append(page.Entries, api.Entry{RunID: e.RunID, Pos: e.Pos, Kind: e.Kind, At: e.At, Data: json.RawMessage(e.Data)})
	}
	if len(es) == in.Limit {
		next := es[len(es)-1].Pos
		page.Next = &next
	}
	return &body[api.EntryPage]{page}, nil
}

func wireRun(r hitch.Run) api.Run {
	out := api.Run{ID: r.ID, Tenant: r.Tenant, RootID: r.RootID, ParentID: r.ParentID, Agent: r.Agent, Version: r.Version,
		Status: string(r.Status), Position: r.Position, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Title: r.Title}
	if f := r.ForkedFrom; f != nil {
		out.ForkedFrom = &api.ForkedFrom{Run: f.Run, Pos: f.Pos, Replay: f.Replay}
	}
	if o := r.Outcome; o != nil {
		out.Outcome = &api.Outcome{Status: string(o.Status), Answer: o.Answer, Raw: o.Raw, Reason: o.Reason, Error: o.Error,
			Uncertain: o.Uncertain, CancelledBy: o.CancelledBy, CancelReason: o.CancelReason, Turns: o.Turns, Attempts: o.Attempts, CostUSD: o.CostUSD,
			Usage: wireUsage(o.Usage)}
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func wireCall(c hitch.CallRecord) api.Call {
	args := json.RawMessage(c.Arguments)
	if !json.Valid(args) {
		args, _ = json.Marshal(c.Arguments)
	}
	out := api.Call{ID: c.Key, ProviderID: c.ProviderID, Tool: c.Tool, Arguments: args, Turn: c.Turn, AskedAt: c.AskedAt,
		State: c.State, DecidedAt: c.DecidedAt, Answer: c.Answer, AnsweredBy: c.AnsweredBy, AnswerReason: c.AnswerReason,
		AnsweredAt: c.AnsweredAt, StartedAt: c.StartedAt, Attempts: c.Attempts, Node: c.Node, Output: c.Output, Error: c.Error,
		Uncertain: c.Uncertain, EndedAt: c.EndedAt, Positions: c.Positions}
	if d := c.Decision; d != nil {
		out.Verdict, out.Reason, out.Rule = string(d.Verdict), d.Reason, d.Rule
	}
	if r := c.Reconciled; r != nil {
		out.Reconciled = &api.Reconcile{Call: r.Call, Output: r.Output, Unconfirmed: r.Unconfirmed, Error: r.Error, By: r.By}
	}
	if out.Positions == nil {
		out.Positions = []int64{}
	}
	return out
}

// reasons reads the reason filter: "none" stands for no reason.
func reasons(in []string) []string {
	var out []string
	for _, r := range in {
		if r == "none" {
			r = ""
		}
		out = append(out, r)
	}
	return out
}

// withWaiting says what a waiting run waits for, from its journal's last
// entry (the run.waiting it parked with): one point read, for waiting
// runs only. A read that fails leaves Waiting out.
func (s *Server) withWaiting(ctx context.Context, r api.Run) api.Run {
	if r.Status != string(hitchtype.StatusWaiting) || r.Position < 1 {
		return r
	}
	es, err := s.scope(ctx).Journal(ctx, r.ID, r.Position-1, 1)
	if err != nil || len(es) != 1 || es[0].Kind != hitchtype.KindRunWaiting {
		return r
	}
	var w hitchtype.RunWaiting
	if json.Unmarshal(es[0].Data, &w) == nil {
		r.Waiting = &api.Waiting{Reason: w.Reason, Calls: w.Calls}
	}
	return r
}

// runAfter answers a command with the run as it stands after it.
func (s *Server) runAfter(ctx context.Context, id string) (*body[api.Run], error) {
	run, err := s.scope(ctx).Get(ctx, id)
	return reply(s, "get run", run, err, wireRun)
}
