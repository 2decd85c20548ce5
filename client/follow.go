package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hitch-dev/hitch/api"
)

// Follow yields a run's journal entries after position after, in order,
// as they are committed, until the run has ended and its last entry was
// yielded. A dropped connection is resumed from the last entry yielded,
// after a backoff that doubles from the client's first retry wait up to
// its longest; the entries yielded are exactly the journal's, with no gap
// and no duplicate. The sequence ends with an error when ctx ends, the
// server refuses the stream (an *Error: not found, forbidden, ...), or
// more reconnects in a row than the client allows fail.
func (c *Client) Follow(ctx context.Context, runID string, after int64) iter.Seq2[api.Entry, error] {
	return func(yield func(api.Entry, error) bool) {
		op := "follow " + runID
		entries(op, c.stream(ctx, op, c.resume("/v1/runs/"+esc(runID)+"/events"), itoa(after)), after, runPos, yield)
	}
}

// entries yields the entries of a stream of events (a run's or a
// session's), which follows position after, checking that each is the next.
func entries[E any](op string, events iter.Seq2[event, error], after int64, pos func(E) int64, yield func(E, error) bool) {
	var zero E
	for ev, err := range events {
		if err != nil {
			yield(zero, err)
			return
		}
		var e E
		if err := json.Unmarshal(ev.data, &e); err != nil {
			yield(zero, fmt.Errorf("%s: event %s: %w", op, ev.id, err))
			return
		}
		if pos(e) != after+1 {
			yield(zero, fmt.Errorf("%s: entry %d after %d: the stream skipped or repeated", op, pos(e), after))
			return
		}
		after = pos(e)
		if !yield(e, nil) {
			return
		}
	}
}

func runPos(e api.Entry) int64            { return e.Pos }
func sessionPos(e api.SessionEntry) int64 { return e.Pos }

// FollowSession yields a session's journal entries after position after,
// as they are appended, resuming after a dropped connection as Follow does.
// A session does not end: the sequence ends when ctx ends (with its error)
// or the caller stops.
func (c *Client) FollowSession(ctx context.Context, sessionID string, after int64) iter.Seq2[api.SessionEntry, error] {
	return func(yield func(api.SessionEntry, error) bool) {
		op := "follow session " + sessionID
		entries(op, c.stream(ctx, op, c.resume("/v1/sessions/"+esc(sessionID)+"/events"), itoa(after)), after, sessionPos, yield)
	}
}

// FollowFamily yields the journal entries of a root run and every run of
// its family, each run's in order, until every run has ended. cursor is a
// family cursor from an earlier stream ("" from the start); each yielded
// cursor resumes exactly after its entry.
func (c *Client) FollowFamily(ctx context.Context, rootID, cursor string) iter.Seq2[FamilyEntry, error] {
	return func(yield func(FamilyEntry, error) bool) {
		path := "/v1/runs/" + esc(rootID) + "/family/events"
		for ev, err := range c.stream(ctx, "follow the family of "+rootID, c.resume(path), cursor) {
			if err != nil {
				yield(FamilyEntry{}, err)
				return
			}
			var e api.Entry
			if err := json.Unmarshal(ev.data, &e); err != nil {
				yield(FamilyEntry{}, fmt.Errorf("follow the family of %s: %w", rootID, err))
				return
			}
			if !yield(FamilyEntry{Entry: e, Cursor: ev.id}, nil) {
				return
			}
		}
	}
}

// FamilyEntry is one entry of a family's stream and the cursor that
// resumes after it.
type FamilyEntry struct {
	api.Entry
	Cursor string
}

// event is one server-sent event.
type event struct {
	id, kind string
	data     []byte
}

// errEndless says a stream ended without its end event: the connection
// was cut, or the server stopped; the stream is resumed.
var errEndless = errors.New("the stream ended before its end event")

// opener makes the request of a stream's connection that resumes after
// the cursor last ("" or "0": from the start).
type opener func(ctx context.Context, last string) (*http.Request, error)

// resume opens the stream at path, resuming with Last-Event-ID.
func (c *Client) resume(path string) opener {
	return func(ctx context.Context, last string) (*http.Request, error) {
		var q url.Values
		if last != "" && last != "0" {
			q = url.Values{"after": {last}}
		}
		req, err := c.request(ctx, http.MethodGet, path, q, nil)
		if err != nil {
			return nil, err
		}
		if last != "" && last != "0" {
			req.Header.Set("Last-Event-ID", last)
		}
		return req, nil
	}
}

// StartFollow starts a run and yields its journal entries from the first,
// as Follow does, in one request: the server answers the start with the
// run's event stream (POST /v1/runs with Accept: text/event-stream). The
// first entry's RunID names the run. With in.ID set, an id that exists
// with the same agent and input starts nothing and yields that run's
// journal; another input ends the sequence with an ErrConflict. A
// connection cut after the server answered resumes on the run's stream
// route from the last entry yielded; one cut before the answer is retried
// only with in.ID set, since without an id a retry could start a second
// run.
func (c *Client) StartFollow(ctx context.Context, in api.StartRun) iter.Seq2[api.Entry, error] {
	return func(yield func(api.Entry, error) bool) {
		op := "start run"
		var follow opener // the run's stream, once the start was answered
		tries := 0
		open := func(ctx context.Context, last string) (*http.Request, error) {
			if follow != nil {
				return follow(ctx, last)
			}
			if tries++; tries > 1 && in.ID == "" {
				return nil, errors.New("the start got no answer, and without an id a retry could start a second run")
			}
			req, err := c.request(ctx, http.MethodPost, "/v1/runs", nil, in)
			if err != nil {
				return nil, err
			}
			return req, nil
		}
		answered := func(resp *http.Response) {
			if loc := resp.Header.Get("Location"); follow == nil && strings.HasPrefix(loc, "/v1/runs/") {
				follow = c.resume(loc + "/events")
			}
		}
		entries(op, c.streamWith(ctx, op, open, answered, ""), 0, runPos, yield)
	}
}

// stream yields the entry events of an event stream from the cursor last,
// reconnecting after a cut from the id of the last event yielded.
func (c *Client) stream(ctx context.Context, op string, open opener, last string) iter.Seq2[event, error] {
	return c.streamWith(ctx, op, open, nil, last)
}

// streamWith is stream; answered, when set, sees each answer that opened
// a stream, before its events.
func (c *Client) streamWith(ctx context.Context, op string, open opener, answered func(*http.Response), last string) iter.Seq2[event, error] {
	return func(yield func(event, error) bool) {
		failures := 0
		wait := c.retry.min
		for {
			got, ended, err := c.streamOnce(ctx, op, open, answered, &last, yield)
			if ended || errors.Is(err, errStop) {
				return
			}
			if ctx.Err() != nil {
				yield(event{}, fmt.Errorf("%s: %w", op, ctx.Err()))
				return
			}
			var pe *Error
			if errors.As(err, &pe) && !IsTransient(pe) {
				yield(event{}, err)
				return
			}
			if got {
				failures, wait = 0, c.retry.min
			}
			failures++
			if failures > c.retry.tries {
				yield(event{}, fmt.Errorf("%s: gave up after %d reconnects without an event: %w", op, c.retry.tries, err))
				return
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				yield(event{}, fmt.Errorf("%s: %w", op, ctx.Err()))
				return
			case <-t.C:
			}
			wait = min(2*wait, c.retry.max)
		}
	}
}

// errStop says the caller stopped taking events.
var errStop = errors.New("stopped")

// streamOnce reads one connection's events. got: at least one entry event
// was yielded; ended: the stream's end event came.
func (c *Client) streamOnce(ctx context.Context, op string, open opener, answered func(*http.Response), last *string, yield func(event, error) bool) (got, ended bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := open(sctx, *last)
	if err != nil {
		return false, false, &Error{Op: op, Problem: *api.NewProblem(api.TypeInvalid, err.Error())}
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.hc.Do(req)
	if err != nil {
		return false, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && (resp.StatusCode != http.StatusCreated || req.Method != http.MethodPost) {
		return false, false, problemOf(op, resp)
	}
	if answered != nil {
		answered(resp)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return false, false, &Error{Op: op, Problem: *api.NewProblem(api.TypeInternal, "the answer is "+ct+", not an event stream")}
	}
	br := readers.Get().(*bufio.Reader)
	br.Reset(resp.Body)
	defer func() {
		br.Reset(nil) // hold no connection
		readers.Put(br)
	}()
	for {
		ev, err := readEvent(br)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errEndless
			}
			return got, false, err
		}
		switch ev.kind {
		case api.EventEntry:
			if ev.id == "" {
				return got, false, fmt.Errorf("%s: an entry event without an id", op)
			}
			if !yield(ev, nil) {
				return got, false, errStop
			}
			got, *last = true, ev.id
		case api.EventEnd:
			return got, true, nil
		case api.EventError:
			var p api.Problem
			if json.Unmarshal(ev.data, &p) != nil || p.Type == "" {
				p = *api.NewProblem(api.TypeInternal, string(ev.data))
			}
			return got, false, &Error{Op: op, Problem: p}
		}
	}
}

// readers keep the streams' read buffers, which are large enough for a
// commit's events in one read, from one stream to the next: a stream is
// often short (a run started and followed to its end), and allocating and
// clearing a buffer for each costs more than the stream's events.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// readEvent reads one event; comments and unknown fields are skipped. An
// event is complete only at its blank line: a cut in the middle of one
// drops it, and it is read again after the resume.
func readEvent(br *bufio.Reader) (event, error) {
	var ev event
	var data bytes.Buffer
	size := 0
	for {
		line, err := readLine(br, MaxEventBytes-size)
		if err != nil {
			return ev, err
		}
		size += len(line)
		s := strings.TrimRight(string(line), "\r\n")
		if s == "" {
			if ev.kind == "" && data.Len() == 0 && ev.id == "" {
				continue
			}
			ev.data = data.Bytes()
			if ev.kind == "" {
				ev.kind = "message"
			}
			return ev, nil
		}
		if strings.HasPrefix(s, ":") {
			continue
		}
		field, value, _ := strings.Cut(s, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.id = value
		case "event":
			ev.kind = value
		case "data":
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(value)
		}
	}
}

// readLine reads one line of at most max bytes.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		if len(line)+len(part) > max {
			return nil, fmt.Errorf("an event is over %d bytes", MaxEventBytes)
		}
		line = append(line, part...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}
