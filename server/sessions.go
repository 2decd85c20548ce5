package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/sessions"
)

// The session routes: conversations with an agent, their message queues,
// journals and event streams. A session belongs to a tenant; another
// tenant's session answers 404, exactly as one that does not exist.

// sessionKey names a session's stream in the hub. Run ids never hold a
// slash, so a session's key never wakes a run's stream.
func sessionKey(id string) string { return "session/" + id }

type sessionIn struct {
	ID string `path:"id" maxLength:"128" doc:"The session's id."`
}

func (s *Server) getSession(ctx context.Context, in *sessionIn) (*body[api.Session], error) {
	ses, err := s.scope(ctx).Sessions().Get(ctx, in.ID)
	return reply(s, "get session", ses, err, wireSession)
}

func (s *Server) interruptSession(ctx context.Context, in *sessionIn) (*body[api.Session], error) {
	sc := s.scope(ctx)
	if err := sc.Sessions().Interrupt(ctx, in.ID); err != nil {
		return nil, s.fail("interrupt", err)
	}
	s.hub.wake(sessionKey(in.ID))
	ses, err := sc.Sessions().Get(ctx, in.ID)
	return reply(s, "interrupt", ses, err, wireSession)
}

func (s *Server) listQueue(ctx context.Context, in *struct {
	ID    string `path:"id" maxLength:"128" doc:"The session's id."`
	Limit int    `query:"limit" minimum:"1" maximum:"1000" default:"100" doc:"Messages at most."`
}) (*body[api.Queue], error) {
	q, err := s.scope(ctx).Sessions().Queue(ctx, in.ID, in.Limit)
	return reply(s, "queue", q, err, wireQueueAnswer)
}

// messagePath names a queued message of a session.
type messagePath struct {
	ID      string `path:"id" maxLength:"128" doc:"The session's id."`
	Message string `path:"message" maxLength:"128" doc:"The queued message's id."`
}

func (s *Server) editMessage(ctx context.Context, in *struct {
	ID      string `path:"id" maxLength:"128" doc:"The session's id."`
	Message string `path:"message" maxLength:"128" doc:"The queued message's id."`
	Body    api.Edit
}) (*body[api.Queue], error) {
	if err := s.scope(ctx).Sessions().Edit(ctx, in.ID, in.Message, in.Body.Text); err != nil {
		return nil, s.fail("edit", err)
	}
	s.hub.wake(sessionKey(in.ID))
	return s.queueOut(ctx, in.ID)
}

func (s *Server) removeMessage(ctx context.Context, in *messagePath) (*body[api.Queue], error) {
	if err := s.scope(ctx).Sessions().Remove(ctx, in.ID, in.Message); err != nil {
		return nil, s.fail("remove", err)
	}
	s.hub.wake(sessionKey(in.ID))
	return s.queueOut(ctx, in.ID)
}

func (s *Server) sessionStatus(ctx context.Context, in *sessionIn) (*body[api.SessionStatus], error) {
	st, err := s.scope(ctx).Sessions().Status(ctx, in.ID)
	return reply(s, "session status", st, err, wireSessionStatus)
}

func (s *Server) sessionTranscript(ctx context.Context, in *struct {
	ID    string `path:"id" maxLength:"128" doc:"The session's id."`
	After int64  `query:"after" minimum:"0" doc:"Entries after this position."`
	Limit int    `query:"limit" minimum:"1" maximum:"1000" default:"100" doc:"Entries per page."`
}) (*body[api.SessionEntryPage], error) {
	es, err := s.scope(ctx).Sessions().Journal(ctx, in.ID, in.After, in.Limit)
	if err != nil {
		return nil, s.fail("session transcript", err)
	}
	page := api.SessionEntryPage{Entries: make([]api.SessionEntry, 0, len(es))}
	for _, e := range es {
		page.Entries = append(page.Entries, wireSessionEntry(e))
	}
	if len(es) == in.Limit {
		next := es[len(es)-1].Pos
		page.Next = &next
	}
	return &body[api.SessionEntryPage]{page}, nil
}

func (s *Server) streamSession(ctx context.Context, in *struct {
	ID          string `path:"id" maxLength:"128" doc:"The session's id."`
	After       string `query:"after" maxLength:"32" doc:"Resume after this event id (as Last-Event-ID)."`
	LastEventID string `header:"Last-Event-ID" maxLength:"32" doc:"Resume after this event id; ?after wins when both are given."`
}) (*huma.StreamResponse, error) {
	sc := s.scope(ctx)
	if _, err := sc.Sessions().Get(ctx, in.ID); err != nil {
		return nil, s.fail("stream", err)
	}
	after, err := resumePosition(in.After, in.LastEventID, "session journal")
	if err != nil {
		return nil, err
	}
	return s.streamed(ctx, func(hctx huma.Context) {
		key := sessionKey(in.ID)
		f := &follower{s: s, sc: sc, ctx: hctx.Context(), session: in.ID, after: map[string]int64{key: after}, runs: []string{key}}
		f.serve(hctx, false)
	})
}

func (s *Server) createSession(ctx context.Context, in *struct {
	Body api.CreateSession
}) (*statusBody[api.CreatedSession], error) {
	if err := s.can(ctx, "OpenSession"); err != nil {
		return nil, err
	}
	b := in.Body
	a, ok := s.agents[b.Agent]
	if !ok {
		return nil, invalid("body.agent", "is not an agent of this server (GET /v1/agents lists them)")
	}
	ses, isNew, err := s.scope(ctx).Sessions().Open(ctx, a, sessions.Options{ID: b.ID, Metadata: b.Metadata})
	if err != nil {
		return nil, s.fail("create session", err)
	}
	return created(isNew, api.CreatedSession{Session: wireSession(ses), Created: isNew}), nil
}

func (s *Server) listSessions(ctx context.Context, in *struct {
	After string `query:"after" maxLength:"512" doc:"The cursor the previous page returned."`
	Limit int    `query:"limit" minimum:"1" maximum:"1000" default:"50" doc:"Sessions per page."`
}) (*body[api.SessionPage], error) {
	list, next, err := s.scope(ctx).Sessions().List(ctx, sessions.ListParams{After: in.After, Limit: in.Limit})
	if err != nil {
		return nil, s.fail("list sessions", err)
	}
	page := api.SessionPage{Sessions: make([]api.Session, 0, len(list)), Next: next}
	for _, ses := range list {
		page.Sessions = append(page.Sessions, wireSession(ses))
	}
	return &body[api.SessionPage]{page}, nil
}

func (s *Server) send(ctx context.Context, in *struct {
	ID   string `path:"id" maxLength:"128" doc:"The session's id."`
	Key  string `header:"Idempotency-Key" maxLength:"256" doc:"Makes a retried send admit the message once (remembered 24 h by default)."`
	Body api.Send
}) (*statusBody[api.Sent], error) {
	if err := s.can(ctx, "Send"); err != nil {
		return nil, err
	}
	if s.stopping.Load() {
		return nil, api.NewProblem(api.TypeUnavailable, "the server is stopping: send on another node")
	}
	if strings.TrimSpace(in.Body.Text) == "" {
		return nil, invalid("body.text", "is blank")
	}
	res, err := s.scope(ctx).Sessions().Send(ctx, in.ID, in.Body.Text, sessions.SendOptions{IdempotencyKey: in.Key, Mode: sessions.Mode(in.Body.Mode)})
	if err != nil && res.MessageID == "" {
		return nil, s.fail("send", err)
	}
	// A send whose message was admitted but whose interrupt was not is
	// still a durable admission: the message runs, after the active one.
	s.hub.wake(sessionKey(in.ID))
	return created(!res.Duplicate, api.Sent{MessageID: res.MessageID, Position: res.Position, Mode: string(res.Mode), Duplicate: res.Duplicate}), nil
}

func (s *Server) queueOut(ctx context.Context, id string) (*body[api.Queue], error) {
	q, err := s.scope(ctx).Sessions().Queue(ctx, id, 0)
	return reply(s, "queue", q, err, wireQueueAnswer)
}

// sessionPass sends the session's journal entries past the cursor, a page
// at a time. A session does not end: done is never true.
func (f *follower) sessionPass() (done, ok bool) {
	page := DefaultJournalPage
	key := sessionKey(f.session)
	for {
		es, err := f.sc.Sessions().Journal(f.ctx, f.session, f.after[key], page)
		if err != nil {
			f.fail(err)
			return false, false
		}
		for _, e := range es {
			f.after[key] = e.Pos
			data, _ := json.Marshal(wireSessionEntry(e))
			if !f.write(fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", e.Pos, api.EventEntry, data)) {
				return false, false
			}
		}
		if len(es) < page {
			return false, true
		}
		select {
		case <-f.s.stop:
			return false, false
		default:
		}
	}
}

func wireSession(ses sessions.Session) api.Session {
	return api.Session{ID: ses.ID, Tenant: ses.Tenant, Agent: ses.Agent, Version: ses.Version, Metadata: ses.Metadata,
		ActiveRun: ses.ActiveRun, Position: ses.Position, Queued: ses.Queued, CreatedAt: ses.CreatedAt, UpdatedAt: ses.UpdatedAt}
}

func wireQueue(q []sessions.QueuedMessage) []api.QueuedMessage {
	out := make([]api.QueuedMessage, 0, len(q))
	for _, m := range q {
		out = append(out, api.QueuedMessage{ID: m.ID, Position: m.Position, Mode: string(m.Mode), Text: m.Text})
	}
	return out
}

func wireQueueAnswer(q []sessions.QueuedMessage) api.Queue { return api.Queue{Messages: wireQueue(q)} }

func wireUsage(u hitch.Usage) api.Usage {
	return api.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedInputTokens: u.CachedInputTokens, Generations: u.Generations}
}

func wireSessionStatus(st sessions.Status) api.SessionStatus {
	out := api.SessionStatus{Session: wireSession(st.Session), Queue: wireQueue(st.Queue), Submissions: []api.Submission{},
		Usage: wireUsage(st.Usage), CostUSD: st.CostUSD}
	for _, sub := range st.Submissions {
		w := api.Submission{MessageID: sub.MessageID, RunID: sub.RunID, Text: sub.Text, Joined: sub.Joined, Outcome: string(sub.Outcome),
			Status: string(sub.Status), Reason: sub.Reason, Answer: sub.Answer, Error: sub.Error, CostUSD: sub.CostUSD}
		if sub.Usage != nil {
			u := wireUsage(*sub.Usage)
			w.Usage = &u
		}
		out.Submissions = append(out.Submissions, w)
	}
	return out
}

func wireSessionEntry(e sessions.Entry) api.SessionEntry {
	return api.SessionEntry{SessionID: e.SessionID, Pos: e.Pos, Kind: e.Kind, At: e.At, Data: json.RawMessage(e.Data)}
}
