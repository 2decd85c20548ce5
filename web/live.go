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
	id := r.PathValue("id")
	after := r.FormValue("after")
	if le := r.Header.Get("Last-Event-ID"); le != "" {
		after = le
	}
	if _, err := strconv.ParseInt(after, 10, 64); err != nil {
		http.Error(w, fmt.Sprintf("after %q: want a journal position", after), http.StatusUnprocessableEntity)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(id)+"/events?after="+after, nil)
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
		switch ev.event {
		case "":
			return write(": heartbeat\n\n")
		case api.EventEntry:
			var e api.Entry
			if err := json.Unmarshal([]byte(ev.data), &e); err != nil {
				return false
			}
			var buf bytes.Buffer
			if err := c.tmpl["entries"].ExecuteTemplate(&buf, "entry", view(e)); err != nil {
				return false
			}
			return write(fmt.Sprintf("id: %d\nevent: entry\ndata: %s\n\n", e.Pos, strings.ReplaceAll(strings.TrimSpace(buf.String()), "\n", "\ndata: ")))
		case api.EventEnd:
			var run api.Run
			_ = json.Unmarshal([]byte(ev.data), &run)
			write(fmt.Sprintf("event: end\ndata: %s\n\n", run.Status))
			return false
		default:
			var p api.Problem
			_ = json.Unmarshal([]byte(ev.data), &p)
			write(fmt.Sprintf("event: failed\ndata: %s\n\n", strings.ReplaceAll(p.Detail, "\n", " ")))
			return false
		}
	})
}
