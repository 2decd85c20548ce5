package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hitch-dev/hitch/api"
)

// pipeWriter is the ResponseWriter of an in-process event stream: the
// API writes into a pipe the console reads.
type pipeWriter struct {
	h      http.Header
	pw     *io.PipeWriter
	once   sync.Once
	status int
	ready  chan struct{}
}

func (p *pipeWriter) Header() http.Header { return p.h }
func (p *pipeWriter) WriteHeader(s int) {
	p.once.Do(func() { p.status = s; close(p.ready) })
}
func (p *pipeWriter) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return p.pw.Write(b)
}
func (p *pipeWriter) Flush() {}

// live streams a run's journal to the browser as server-sent events whose
// data is each entry rendered as HTML, by the template the page uses. It
// follows the API's own stream of the run, in process.
func (c *Console) live(w http.ResponseWriter, r *http.Request) {
	c.relay(w, r, "/v1/runs/"+url.PathEscape(r.PathValue("id"))+"/events", "journal", func(ev sseEvent) (string, bool) {
		switch ev.event {
		case api.EventEntry:
			var e api.Entry
			if err := json.Unmarshal([]byte(ev.data), &e); err != nil {
				return "", false
			}
			return c.entryFrame(e.Pos, "entries", "entry", view(e))
		case api.EventEnd:
			var run api.Run
			_ = json.Unmarshal([]byte(ev.data), &run)
			return fmt.Sprintf("event: end\ndata: %s\n\n", run.Status), false
		}
		return failedFrame(ev), false
	})
}

// relay follows the API's stream at path (a run's or a session's events),
// in process and as the signed-in principal, from the position the browser
// asks for (?after= or Last-Event-ID), and writes to the browser what frame
// makes of each event, until frame says to stop, the API ends the stream
// or the browser leaves. Heartbeats pass through. what names the journal in
// the refusal of a bad position.
func (c *Console) relay(w http.ResponseWriter, r *http.Request, path, what string, frame func(sseEvent) (string, bool)) {
	after := r.FormValue("after")
	if le := r.Header.Get("Last-Event-ID"); le != "" {
		after = le
	}
	if n, err := strconv.ParseInt(after, 10, 64); err != nil || n < 0 {
		http.Error(w, fmt.Sprintf("after %q: want a %s position", after, what), http.StatusUnprocessableEntity)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, path+"?after="+after, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if tok := sessionFrom(r.Context()).token; tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	req.RemoteAddr = "127.0.0.1:0"
	pr, pw := io.Pipe()
	sw := &pipeWriter{h: http.Header{}, pw: pw, ready: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.api.ServeHTTP(sw, req)
		sw.WriteHeader(http.StatusOK)
		_ = pw.Close()
	}()
	defer func() {
		cancel()
		_ = pr.CloseWithError(io.ErrClosedPipe)
		<-done
	}()
	<-sw.ready
	rc := http.NewResponseController(w)
	if sw.status != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(pr, 64<<10))
		res := result{status: sw.status, body: b}
		if res.status == http.StatusUnauthorized {
			http.Error(w, "signed out", http.StatusUnauthorized)
			return
		}
		http.Error(w, res.message(), res.status)
		return
	}
	// The stream outlives the server's read timeout; each write has its
	// own deadline.
	_ = rc.SetReadDeadline(time.Time{})
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(s string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(LiveWriteTimeout))
		if _, err := io.WriteString(w, s); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write(": hitch console\n\n") {
		return
	}
	readSSE(pr, func(ev sseEvent) bool {
		if ev.event == "" {
			return write(": heartbeat\n\n")
		}
		s, more := frame(ev)
		if s != "" && !write(s) {
			return false
		}
		return more
	})
}

// entryFrame renders one journal entry with the named template of page as
// an SSE "entry" event whose id is its position.
func (c *Console) entryFrame(pos int64, page, name string, v any) (string, bool) {
	var buf bytes.Buffer
	if err := c.tmpl[page].ExecuteTemplate(&buf, name, v); err != nil {
		return "", false
	}
	return fmt.Sprintf("id: %d\nevent: entry\ndata: %s\n\n", pos, strings.ReplaceAll(strings.TrimSpace(buf.String()), "\n", "\ndata: ")), true
}

// failedFrame passes a problem the API streamed on as a "failed" event.
func failedFrame(ev sseEvent) string {
	var p api.Problem
	_ = json.Unmarshal([]byte(ev.data), &p)
	return fmt.Sprintf("event: failed\ndata: %s\n\n", strings.ReplaceAll(p.Detail, "\n", " "))
}
