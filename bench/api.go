package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/client"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/sandbox/local"
	"github.com/hitch-dev/hitch/server"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/tool/builtin"
)

// APIParams describe a measurement of the HTTP API: Clients clients on
// loopback each start a run (POST /v1/runs) and follow its event stream to
// the end, then start the next, Runs in all. A run is Steps calls of the
// read tool on a small file, answered by a scripted model at once.
type APIParams struct {
	Clients, Runs, Steps int
	// TwoRequests starts each run with a request of its own and then opens
	// its stream with another, where by default one request does both
	// (POST /v1/runs answered with the run's event stream).
	TwoRequests bool
	// DB is the SQLite file; it must not exist yet.
	DB   string
	Sync sqlite.Sync
	// StepConcurrency is the runtime's Config.StepConcurrency; 0 takes
	// its default.
	StepConcurrency int
}

// APIResult is one measurement of the HTTP API.
type APIResult struct {
	APIParams
	Elapsed time.Duration
	// FirstEvent is the time from sending a start to the stream's first
	// entry; Reply, to the start's answer (its first byte, with one
	// request: the stream's headers).
	FirstEvent, Reply Quantiles
	// The hops after the start's answer: Open, from it to the stream's
	// answer (two requests only); Feed, from the stream's answer to its
	// first entry.
	Open, Feed Quantiles
}

// RunsPerSecond is the runs started, followed and ended a second.
func (r APIResult) RunsPerSecond() float64 { return float64(r.Runs) / r.Elapsed.Seconds() }

// Line is the RESULT line of an API measurement.
func (r APIResult) Line() string {
	requests := 1
	if r.TwoRequests {
		requests = 2
	}
	return fmt.Sprintf("RESULT peer=hitch mode=api-sqlite-%s clients=%d runs=%d steps=%d requests=%d run_s=%.4f runs_per_s=%.0f "+
		"first_event_ms_p50=%.1f p99=%.1f max=%.1f start_reply_ms_p50=%.1f p99=%.1f stream_open_ms_p50=%.1f p99=%.1f stream_first_ms_p50=%.1f p99=%.1f",
		strings.ToLower(r.Sync.String()), r.Clients, r.Runs, r.Steps, requests, r.Elapsed.Seconds(), r.RunsPerSecond(),
		ms(r.FirstEvent.P50), ms(r.FirstEvent.P99), ms(r.FirstEvent.Max), ms(r.Reply.P50), ms(r.Reply.P99),
		ms(r.Open.P50), ms(r.Open.P99), ms(r.Feed.P50), ms(r.Feed.P99))
}

// RunAPI serves the API on loopback from this process and measures it
// with p.Clients clients of package client.
func RunAPI(ctx context.Context, p APIParams) (APIResult, error) {
	if p.Clients < 1 || p.Clients > 1024 || p.Runs < 1 || p.Steps < 1 {
		return APIResult{}, fmt.Errorf("bench: api: %d clients, %d runs, %d steps: want 1–1024 clients and at least one run and step", p.Clients, p.Runs, p.Steps)
	}
	root := filepath.Join(filepath.Dir(p.DB), "workspace")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return APIResult{}, err
	}
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte(strings.Repeat("a line of notes\n", 20)), 0o644); err != nil {
		return APIResult{}, err
	}
	sb, err := local.New(local.Config{Root: root})
	if err != nil {
		return APIResult{}, err
	}
	tools, err := builtin.New(sb, "read")
	if err != nil {
		return APIResult{}, err
	}
	turns := make([]scripted.Turn, 0, p.Steps+1)
	for range p.Steps {
		turns = append(turns, scripted.Turn{Calls: []scripted.Call{{Name: "read", Args: `{"path":"notes.txt"}`}}})
	}
	turns = append(turns, scripted.Turn{Text: "read"})
	agent, err := hitch.Build(hitch.Spec{Name: "reader", Model: scripted.New("reader", scripted.Script{Turns: turns}),
		Tools: tools, Policy: policy.AllowAll(), Limits: hitch.Limits{ModelAttempts: p.Steps + 1}})
	if err != nil {
		return APIResult{}, err
	}
	st, err := sqlite.Open(ctx, p.DB, sqlite.WithSync(p.Sync))
	if err != nil {
		return APIResult{}, err
	}
	defer st.Close()
	var srv atomic.Pointer[server.Server]
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{agent}, StepConcurrency: p.StepConcurrency, OnEvent: func(ev hitch.Event) {
		if s := srv.Load(); s != nil {
			s.Notify(ev)
		}
	}})
	if err != nil {
		return APIResult{}, err
	}
	defer rt.Close(context.Background())
	s, err := server.New(server.Config{Runtime: rt, Store: st, Agents: []*hitch.Agent{agent}, NoConsole: true,
		Limits: server.Limits{StreamsPerToken: 2 * p.Clients}})
	if err != nil {
		return APIResult{}, err
	}
	srv.Store(s)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return APIResult{}, err
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- s.Serve(sctx, ln, 10*time.Second) }()
	defer func() { stop(); <-served }()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * p.Clients, MaxIdleConns: 2 * p.Clients}}
	defer hc.CloseIdleConnections()
	c, err := client.New("http://"+ln.Addr().String(), client.WithHTTPClient(hc))
	if err != nil {
		return APIResult{}, err
	}

	var next atomic.Int64
	samples := make([][]apiSample, p.Clients)
	errs := make([]error, p.Clients)
	begin := time.Now()
	var wg sync.WaitGroup
	for k := range p.Clients {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(p.Runs); i = next.Add(1) - 1 {
				sm, err := startAndFollow(ctx, c, fmt.Sprintf("api-%d", i), p.TwoRequests)
				if err != nil {
					errs[k] = err
					return
				}
				samples[k] = append(samples[k], sm)
			}
		})
	}
	wg.Wait()
	res := APIResult{APIParams: p, Elapsed: time.Since(begin)}
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	var firsts, replies, opens, feeds []time.Duration
	for _, sm := range concat(samples) {
		firsts, replies, feeds = append(firsts, sm.first), append(replies, sm.reply), append(feeds, sm.first-sm.opened)
		if p.TwoRequests {
			opens = append(opens, sm.opened-sm.reply)
		}
	}
	res.FirstEvent, res.Reply, res.Open, res.Feed = quantiles(firsts), quantiles(replies), quantiles(opens), quantiles(feeds)
	return res, nil
}

// apiSample is one run's times from sending its start: to the start's
// answer, to the stream's answer (the same with one request), and to the
// stream's first entry.
type apiSample struct{ reply, opened, first time.Duration }

// startAndFollow starts a run and follows its stream to the end, in one
// request or two, and times it.
func startAndFollow(ctx context.Context, c *client.Client, id string, two bool) (apiSample, error) {
	var sm apiSample
	begin := time.Now()
	// The time of the latest answer's first byte, read once the request
	// that got it has returned.
	var answered atomic.Int64
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotFirstResponseByte: func() { answered.Store(int64(time.Since(begin))) }})
	in := api.StartRun{Agent: "reader", Input: "read the notes", ID: id}
	entries := c.StartFollow(ctx, in)
	if two {
		if _, err := c.StartRun(ctx, in); err != nil {
			return sm, err
		}
		sm.reply = time.Since(begin)
		entries = c.Follow(ctx, id, 0)
	}
	var last api.Entry
	for e, err := range entries {
		if err != nil {
			return sm, err
		}
		if sm.first == 0 {
			sm.first = time.Since(begin)
			sm.opened = time.Duration(answered.Load())
			if !two {
				sm.reply = sm.opened
			}
		}
		last = e
	}
	if last.Kind != hitchtype.KindRunEnded {
		return sm, fmt.Errorf("bench: the stream of %s ended at entry %d, %s", id, last.Pos, last.Kind)
	}
	return sm, nil
}

func concat[T any](s [][]T) []T {
	var out []T
	for _, x := range s {
		out = append(out, x...)
	}
	return out
}
