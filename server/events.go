package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/store"
)

// hub wakes the streams that follow a run when this node commits to its
// journal. A subscriber holds a wake channel of capacity 1: wakes
// coalesce, and nothing else is buffered; the stream reads the store.
type hub struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

func newHub() *hub { return &hub{subs: map[string]map[chan struct{}]struct{}{}} }

func (h *hub) subscribe(runID string, c chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.subs[runID]
	if m == nil {
		m = map[chan struct{}]struct{}{}
		h.subs[runID] = m
	}
	m[c] = struct{}{}
}

func (h *hub) unsubscribe(runID string, c chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if m := h.subs[runID]; m != nil {
		delete(m, c)
		if len(m) == 0 {
			delete(h.subs, runID)
		}
	}
}

// hubKey is the key a run's streams wait on: its id without a tenant's
// prefix (hitch.LocalID), which is what a stream and an event both know.
// Two tenants' runs of one id share a key: a wake is then spurious, and a
// stream woken for nothing reads nothing new.
func hubKey(id string) string { return hitch.LocalID(id) }

func (h *hub) wake(runID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.subs[runID] {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// streamCounts counts the open streams of each token.
type streamCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *streamCounts) acquire(token string, max int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[token] >= max {
		return false
	}
	c.n[token]++
	return true
}

func (c *streamCounts) release(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[token]--; c.n[token] <= 0 {
		delete(c.n, token)
	}
}

// isStream reports whether a request opens an event stream, which is
// exempt from the request timeout.
func isStream(r *http.Request) bool {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/runs" {
		return wantsStream(r.Header.Get("Accept")) // a start answered with its stream
	}
	return r.Method == http.MethodGet && (strings.HasPrefix(r.URL.Path, "/v1/runs/") || strings.HasPrefix(r.URL.Path, "/v1/sessions/")) &&
		strings.HasSuffix(r.URL.Path, "/events")
}

type streamIn struct {
	ID          string `path:"id" maxLength:"128" doc:"The run's id."`
	After       string `query:"after" maxLength:"16384" doc:"Resume after this event id (as Last-Event-ID)."`
	LastEventID string `header:"Last-Event-ID" maxLength:"16384" doc:"Resume after this event id; ?after wins when both are given."`
}

var sseResponses = map[string]*huma.Response{
	"200": {
		Description: "A text/event-stream: one `entry` event per journal entry (data: an Entry), heartbeat comments, and an `end` event (data: the Run) after the last entry of an ended run.",
		Content: map[string]*huma.MediaType{
			"text/event-stream": {Schema: &huma.Schema{Type: "string", Description: "Server-sent events; see docs/api.md."}},
		},
	},
}

func (s *Server) streamRun(ctx context.Context, in *streamIn) (*huma.StreamResponse, error) {
	sc := s.scope(ctx)
	if _, err := sc.Get(ctx, in.ID); err != nil {
		return nil, s.fail("stream", err)
	}
	after, err := resumePosition(in.After, in.LastEventID, "journal")
	if err != nil {
		return nil, err
	}
	return s.streamed(ctx, func(hctx huma.Context) {
		f := &follower{s: s, sc: sc, ctx: hctx.Context(), after: map[string]int64{in.ID: after}, runs: []string{in.ID}}
		f.follow(hctx, in.ID, after)
	})
}

func (s *Server) streamFamily(ctx context.Context, in *streamIn) (*huma.StreamResponse, error) {
	sc := s.scope(ctx)
	root, err := sc.Get(ctx, in.ID)
	if err != nil {
		return nil, s.fail("stream", err)
	}
	if root.RootID != root.ID {
		return nil, invalid("path.id", "is not a root run: follow the family of its root_id")
	}
	cur, loc := resumeCursor(in.After, in.LastEventID)
	after, err := parseFamilyCursor(cur, s.cfg.Limits.FamilyStreamRuns)
	if err != nil {
		return nil, invalid(loc, "%v", err)
	}
	return s.streamed(ctx, func(hctx huma.Context) {
		f := &follower{s: s, sc: sc, ctx: hctx.Context(), root: root.ID, after: after}
		f.serve(hctx, true)
	})
}

// resumeCursor is where a stream resumes: ?after when given, else the
// Last-Event-ID header, with the location a refusal of it names.
func resumeCursor(after, lastEventID string) (cur, loc string) {
	if after != "" {
		return after, "query.after"
	}
	return lastEventID, "header.Last-Event-ID"
}

// resumePosition is the position in a journal (what names it) a stream
// resumes after: that of resumeCursor, 0 when there is none.
func resumePosition(after, lastEventID, what string) (int64, error) {
	cur, loc := resumeCursor(after, lastEventID)
	if cur == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(cur, 10, 64)
	if err != nil || n < 0 {
		return 0, invalid(loc, "want a %s position, 0 or more", what)
	}
	return n, nil
}

// openStream counts a stream against its token's limit.
func (s *Server) openStream(ctx context.Context) (func(), error) {
	if s.stopping.Load() {
		return nil, api.NewProblem(api.TypeUnavailable, "the server is stopping: resume the stream on another node")
	}
	p := principalOf(ctx)
	if !s.streams.acquire(p.Name, s.cfg.Limits.StreamsPerToken) {
		return nil, api.NewProblem(api.TypeTooManyStreams, fmt.Sprintf("token %s holds %d streams open: at most %d", p.Name, s.cfg.Limits.StreamsPerToken, s.cfg.Limits.StreamsPerToken))
	}
	return func() { s.streams.release(p.Name) }, nil
}

// streamed answers with an event stream that serve writes, counted
// against the stream limits from now until serve returns.
func (s *Server) streamed(ctx context.Context, serve func(huma.Context)) (*huma.StreamResponse, error) {
	release, err := s.openStream(ctx)
	if err != nil {
		return nil, err
	}
	return &huma.StreamResponse{Body: func(hctx huma.Context) {
		defer release()
		serve(hctx)
	}}, nil
}

// parseFamilyCursor reads RUN=POS,RUN=POS.
func parseFamilyCursor(cur string, maxRuns int) (map[string]int64, error) {
	after := map[string]int64{}
	if cur == "" {
		return after, nil
	}
	for _, part := range strings.Split(cur, ",") {
		id, pos, ok := strings.Cut(part, "=")
		n, err := strconv.ParseInt(pos, 10, 64)
		if !ok || err != nil || n < 0 || hitch.CheckRunID(id) != nil {
			return nil, errors.New("want a family cursor, RUN=POS pairs joined by commas")
		}
		after[id] = n
	}
	if len(after) > maxRuns {
		return nil, fmt.Errorf("names %d runs: at most %d", len(after), maxRuns)
	}
	return after, nil
}

func familyCursor(runs []string, after map[string]int64) string {
	var b strings.Builder
	for _, id := range runs {
		if after[id] == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%d", id, after[id])
	}
	return b.String()
}

// follower writes one stream: it reads each followed run's journal after
// the position sent, in pages, and waits for a wake, a poll tick or a
// heartbeat between reads. Nothing is buffered but one page.
type follower struct {
	s     *Server
	sc    *hitch.Scope // what the stream's principal may read
	ctx   context.Context
	root  string // the family's root, for a family stream
	runs  []string
	after map[string]int64
	w     io.Writer
	rc    *http.ResponseController
	wake  chan struct{}
	// status is the stream's HTTP status: 200, or a start's (201 for a
	// run it created).
	status int

	// session, for a session's stream, is its id; runs and after then
	// hold its sessionKey alone (sessions.go).
	session string
}

func (f *follower) serve(hctx huma.Context, family bool) {
	f.start(hctx)
	f.wake = make(chan struct{}, 1)
	subscribed := map[string]bool{}
	defer func() {
		for id := range subscribed {
			f.s.hub.unsubscribe(hubKey(id), f.wake)
		}
	}()
	lim := f.s.cfg.Limits
	heartbeat := time.NewTicker(lim.Heartbeat)
	defer heartbeat.Stop()
	poll := time.NewTicker(lim.StreamPoll)
	defer poll.Stop()
	if !f.write(": hitch stream\n\n") {
		return
	}
	for {
		if family {
			runs, err := f.familyRuns()
			if err != nil {
				f.fail(err)
				return
			}
			f.runs = runs
		}
		for _, id := range f.runs {
			if !subscribed[id] {
				f.s.hub.subscribe(hubKey(id), f.wake)
				subscribed[id] = true
			}
		}
		var done, ok bool
		if f.session != "" {
			done, ok = f.sessionPass()
		} else {
			done, ok = f.pass(family)
		}
		if !ok {
			return
		}
		if done {
			return
		}
		select {
		case <-f.ctx.Done():
			return
		case <-f.s.stop:
			return
		case <-f.wake:
		case <-poll.C:
		case <-heartbeat.C:
			if !f.write(": heartbeat\n\n") {
				return
			}
		}
	}
}

// follow writes one run's stream from the runtime's shared reader of the
// run (Scope.Follow): the stream reads nothing from the store itself but
// the run at its end, for the end event. A stream whose client does not
// take its events as fast as the run commits them is cut with a
// stream-behind error event; its client resumes from its last event id.
func (f *follower) follow(hctx huma.Context, id string, after int64) {
	f.start(hctx)
	if !f.write(": hitch stream\n\n") {
		return
	}
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	type item struct {
		e   store.Entry
		err error
	}
	// items holds up to a page the reader took from the run's feed and
	// the stream has not written yet, so that a commit's entries go out
	// in one write and one flush.
	page := DefaultJournalPage
	items := make(chan item, page)
	go func() {
		defer close(items)
		for e, err := range f.sc.Follow(ctx, id, after) {
			select {
			case items <- item{e, err}:
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() {
		cancel()
		for range items { // the reader's goroutine ends with ctx
		}
	}()
	heartbeat := time.NewTicker(f.s.cfg.Limits.Heartbeat)
	defer heartbeat.Stop()
	var buf []byte
	for {
		var it item
		var ok bool
		select {
		case <-f.ctx.Done():
			return
		case <-f.s.stop:
			return
		case <-heartbeat.C:
			if !f.write(": heartbeat\n\n") {
				return
			}
			continue
		case it, ok = <-items:
		}
		buf = buf[:0]
		for n := 1; ; n++ {
			switch {
			case !ok:
				if !f.writeBytes(buf) {
					return
				}
				run, err := f.sc.Get(f.ctx, id)
				if err != nil {
					f.fail(err)
					return
				}
				data, _ := json.Marshal(wireRun(run))
				f.write(fmt.Sprintf("event: %s\ndata: %s\n\n", api.EventEnd, data))
				return
			case it.err != nil:
				if !f.writeBytes(buf) {
					return
				}
				if errors.Is(it.err, hitch.ErrFollowerBehind) {
					data, _ := json.Marshal(api.NewProblem(api.TypeBehind, fmt.Sprintf("the stream fell behind the run: resume after event %d", after)))
					f.write(fmt.Sprintf("event: %s\ndata: %s\n\n", api.EventError, data))
				} else if f.ctx.Err() == nil {
					f.fail(it.err)
				}
				return
			}
			after = it.e.Pos
			buf = appendEntryEvent(buf, strconv.FormatInt(it.e.Pos, 10), it.e)
			if n == page {
				break
			}
			select {
			case it, ok = <-items:
				continue
			default:
			}
			break
		}
		if !f.writeBytes(buf) {
			return
		}
	}
}

// appendEntryEvent appends an entry event of id to buf.
func appendEntryEvent(buf []byte, id string, e store.Entry) []byte {
	data, _ := api.Entry{RunID: e.RunID, Pos: e.Pos, Kind: e.Kind, At: e.At, Data: json.RawMessage(e.Data)}.MarshalJSON()
	buf = append(buf, "id: "...)
	buf = append(buf, id...)
	buf = append(buf, "\nevent: "...)
	buf = append(buf, api.EventEntry...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, data...)
	return append(buf, "\n\n"...)
}

// start answers a stream's request: its status and headers.
func (f *follower) start(hctx huma.Context) {
	_, w := humago.Unwrap(hctx)
	f.w, f.rc = w, http.NewResponseController(w)
	// A stream outlives the request timeout; each write has its own.
	_ = f.rc.SetReadDeadline(time.Time{})
	hctx.SetHeader("Content-Type", "text/event-stream")
	hctx.SetHeader("Cache-Control", "no-store")
	hctx.SetHeader("X-Accel-Buffering", "no")
	hctx.SetStatus(cmp.Or(f.status, http.StatusOK))
}

// familyRuns lists a family's runs, root first, in a stable order.
func (f *follower) familyRuns() ([]string, error) {
	max := f.s.cfg.Limits.FamilyStreamRuns
	rows, _, err := f.sc.Runs(f.ctx, hitch.RunsParams{RootID: f.root, Limit: max + 1})
	if err != nil {
		return nil, err
	}
	if len(rows) > max {
		return nil, fmt.Errorf("the family of %s has more than %d runs: follow its runs one at a time", f.root, max)
	}
	runs := []string{f.root}
	seen := map[string]bool{f.root: true}
	// Keep the order already sent; add new runs in creation order.
	for _, id := range f.runs {
		if !seen[id] {
			runs, seen[id] = append(runs, id), true
		}
	}
	for i := len(rows) - 1; i >= 0; i-- { // RunList is newest first
		if id := rows[i].ID; !seen[id] {
			runs, seen[id] = append(runs, id), true
		}
	}
	return runs, nil
}

// pass sends every followed run's entries past the cursor, a page at a
// time. done: every run has ended and its last entry was sent (the end
// event too). ok false: the client is gone or the stream failed.
func (f *follower) pass(family bool) (done, ok bool) {
	page := DefaultJournalPage
	allEnded := true
	var last hitch.Run
	for _, id := range f.runs {
		for {
			es, err := f.sc.Journal(f.ctx, id, f.after[id], page)
			if err != nil {
				f.fail(err)
				return false, false
			}
			for _, e := range es {
				f.after[id] = e.Pos
				evID := strconv.FormatInt(e.Pos, 10)
				if family {
					evID = familyCursor(f.runs, f.after)
				}
				if !f.writeBytes(appendEntryEvent(nil, evID, e)) {
					return false, false
				}
			}
			if len(es) < page {
				break
			}
			select {
			case <-f.s.stop:
				return false, false
			default:
			}
		}
		run, err := f.sc.Get(f.ctx, id)
		if err != nil {
			f.fail(err)
			return false, false
		}
		if !run.Status.Terminal() || run.Position > f.after[id] {
			allEnded = false
		}
		if id == f.runs[0] {
			last = run
		}
	}
	if !allEnded {
		return false, true
	}
	data, _ := json.Marshal(wireRun(last))
	if !f.write(fmt.Sprintf("event: %s\ndata: %s\n\n", api.EventEnd, data)) {
		return false, false
	}
	return true, true
}

func (f *follower) fail(err error) {
	p := problemOf(err, "stream")
	if _, internal := p.(internalError); internal {
		p = api.NewProblem(api.TypeInternal, "internal error")
	}
	data, _ := json.Marshal(p)
	f.write(fmt.Sprintf("event: %s\ndata: %s\n\n", api.EventError, data))
}

// write writes and flushes s, bounded by the stream write timeout.
func (f *follower) write(s string) bool { return f.writeBytes([]byte(s)) }

// writeBytes is write for bytes; it writes nothing for none.
func (f *follower) writeBytes(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	_ = f.rc.SetWriteDeadline(time.Now().Add(f.s.cfg.Limits.StreamWriteTimeout))
	if _, err := f.w.Write(b); err != nil {
		return false
	}
	return f.rc.Flush() == nil
}
