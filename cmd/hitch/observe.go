package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/config"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/telemetry"
)

// newLogger builds the command's logger on standard error, which redacts
// secrets: text by default, JSON with --log-format json.
func newLogger(g *globals) *slog.Logger {
	opts := &slog.HandlerOptions{Level: g.logLevel}
	if g.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(g.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(g.stderr, opts))
}

// checkLogFlags validates --log-format and --log-level.
func checkLogFlags(g *globals) error {
	switch g.logFormat {
	case "text", "json":
	default:
		return usageError{fmt.Errorf("--log-format %q: want text or json", g.logFormat)}
	}
	if err := g.logLevel.UnmarshalText([]byte(g.logLevelName)); err != nil {
		return usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", g.logLevelName)}
	}
	return nil
}

// maxLoggedRuns bounds the runs whose root and session the logger keeps.
const maxLoggedRuns = 10_000

// observer logs what runs journal, one line per lifecycle step, each with
// the run's id, its trace id and its session, and hands entries to the
// OTLP telemetry when the OTEL_* variables ask for it.
type observer struct {
	log *slog.Logger
	tel *telemetry.Telemetry
	st  store.Store
	// met and prom are hitch's own metrics and their /metrics handler,
	// when the command asks for them (metrics.go).
	met  *telemetry.Metrics
	prom http.Handler

	mu   sync.Mutex
	runs map[string]runIDs
}

type runIDs struct{ trace, session string }

func newObserver(ctx context.Context, g *globals, st store.Store, cfg *config.Config) (*observer, error) {
	o := &observer{log: newLogger(g), st: st, runs: map[string]runIDs{}}
	models := map[string]string{}
	for _, a := range cfg.File.Agents {
		if m := cfg.Models[a.Model]; m != nil {
			models[a.Name] = m.Name()
		} else if r := cfg.Routes[a.Model]; r != nil {
			models[a.Name] = r.Name()
		}
	}
	opts := telemetry.Options{Store: st, Redactor: cfg.Secrets, Models: models}
	if err := o.prometheus(g, &opts); err != nil {
		return nil, err
	}
	tel, err := telemetry.FromEnv(ctx, opts)
	if err != nil {
		return nil, err
	}
	o.tel = tel
	if err := o.nodeMetrics(g, cfg); err != nil {
		_ = tel.Shutdown(ctx)
		return nil, err
	}
	return o, nil
}

// wrap returns an event hook that observes, then calls next.
func (o *observer) wrap(next func(hitch.Event)) func(hitch.Event) {
	return func(ev hitch.Event) {
		o.event(ev)
		if next != nil {
			next(ev)
		}
	}
}

func (o *observer) close(ctx context.Context) {
	if o.tel != nil {
		// The last export reads the gauges: the store is still open.
		if err := o.tel.Shutdown(ctx); err != nil {
			o.log.Warn("export telemetry", "err", err)
		}
	}
	if o.met != nil {
		_ = o.met.Close()
	}
}

func (o *observer) event(ev hitch.Event) {
	ctx := context.Background()
	if ev.Err != nil {
		o.log.Error("background service", "err", ev.Err)
		return
	}
	if len(ev.Entries) == 0 {
		return
	}
	if o.tel != nil {
		o.tel.Observe(ctx, ev.RunID, ev.Entries)
	}
	var base []any
	for _, e := range ev.Entries {
		if !o.log.Enabled(ctx, levelOf(e.Kind)) {
			continue // decided before any decoding: logs cost nothing unasked
		}
		if base == nil {
			ids := o.ids(ctx, ev.RunID, ev.Entries)
			base = []any{"run", ev.RunID, "trace_id", ids.trace}
			if ids.session != "" {
				base = append(base, "session", ids.session)
			}
		}
		o.entry(ctx, e, base)
	}
	if last := ev.Entries[len(ev.Entries)-1]; last.Kind == hitchtype.KindRunEnded {
		o.mu.Lock()
		delete(o.runs, ev.RunID)
		o.mu.Unlock()
	}
}

// levelOf is the most an entry of a kind is logged at.
func levelOf(kind string) slog.Level {
	switch kind {
	case hitchtype.KindModelFailed, hitchtype.KindCallFailed, hitchtype.KindCallUncertain, hitchtype.KindCallLost, hitchtype.KindRunEnded:
		return slog.LevelWarn
	case hitchtype.KindRunStarted, hitchtype.KindRunWaiting, hitchtype.KindCallDecided, hitchtype.KindApprovalGrant, hitchtype.KindApprovalDeny:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// ids finds a run's trace id (from its root run) and session, once.
func (o *observer) ids(ctx context.Context, runID string, es []store.Entry) runIDs {
	o.mu.Lock()
	ids, ok := o.runs[runID]
	o.mu.Unlock()
	if ok {
		return ids
	}
	root := runID
	if r, err := o.st.RunGet(ctx, runID); err == nil && r.RootID != "" {
		root = r.RootID
	}
	ids.trace = telemetry.TraceID(root)
	first := es[0]
	if first.Kind != hitchtype.KindRunStarted {
		if got, err := o.st.JournalRead(ctx, store.JournalReadParams{RunID: runID, Limit: 1}); err == nil && len(got) == 1 {
			first = got[0]
		}
	}
	var rs hitchtype.RunStarted
	if first.Kind == hitchtype.KindRunStarted && json.Unmarshal(first.Data, &rs) == nil {
		ids.session = rs.Session
	}
	o.mu.Lock()
	if len(o.runs) >= maxLoggedRuns {
		clear(o.runs)
	}
	o.runs[runID] = ids
	o.mu.Unlock()
	return ids
}

func (o *observer) entry(ctx context.Context, e store.Entry, base []any) {
	var d struct {
		Call    string `json:"call"`
		Verdict string `json:"verdict"`
		Reason  string `json:"reason"`
		Error   string `json:"error"`
		Message string `json:"message"`
		Kind    string `json:"kind"`
		Attempt int    `json:"attempt"`
		Status  string `json:"status"`
		Agent   string `json:"agent"`
		By      string `json:"by"`
	}
	_ = json.Unmarshal(e.Data, &d)
	attrs := append([]any{}, base...)
	if d.Call != "" {
		attrs = append(attrs, "call", d.Call)
	}
	level, msg := slog.LevelDebug, e.Kind
	switch e.Kind {
	case hitchtype.KindRunStarted:
		level, msg = slog.LevelInfo, "run started"
		attrs = append(attrs, "agent", d.Agent)
	case hitchtype.KindRunEnded:
		level, msg = slog.LevelInfo, "run ended"
		attrs = append(attrs, "status", d.Status)
		if d.Status != string(hitchtype.StatusCompleted) {
			level = slog.LevelWarn
			attrs = append(attrs, "reason", d.Reason, "error", d.Error)
		}
		if !o.log.Enabled(ctx, level) {
			return
		}
	case hitchtype.KindRunWaiting:
		level, msg = slog.LevelInfo, "run waiting"
		attrs = append(attrs, "reason", d.Reason)
	case hitchtype.KindModelFailed:
		level, msg = slog.LevelWarn, "model call failed"
		attrs = append(attrs, "attempt", d.Attempt, "kind", d.Kind, "error", d.Message)
	case hitchtype.KindCallDecided:
		level, msg = slog.LevelInfo, "call decided"
		attrs = append(attrs, "verdict", d.Verdict)
		if d.Reason != "" {
			attrs = append(attrs, "reason", d.Reason)
		}
	case hitchtype.KindCallFailed:
		level, msg = slog.LevelWarn, "call failed"
		attrs = append(attrs, "error", d.Error)
	case hitchtype.KindCallUncertain:
		level, msg = slog.LevelWarn, "call outcome unknown"
		attrs = append(attrs, "reason", d.Reason)
	case hitchtype.KindCallLost:
		level, msg = slog.LevelWarn, "call attempt lost"
		attrs = append(attrs, "attempt", d.Attempt, "reason", d.Reason)
	case hitchtype.KindApprovalGrant, hitchtype.KindApprovalDeny:
		level, msg = slog.LevelInfo, e.Kind
		attrs = append(attrs, "by", d.By)
	}
	o.log.Log(ctx, level, msg, append(attrs, "pos", e.Pos)...)
}
