// Package telemetry turns a runtime's journal into OpenTelemetry traces and
// metrics that follow the GenAI semantic conventions.
//
// It reads what the runtime has made durable (the entries a Runtime reports
// through Config.OnEvent) and draws from them one trace per family of runs:
// an invoke_agent span per run, a chat span per model attempt, an
// execute_tool span per tool call, with retries, policy decisions, waits and
// approval answers as events on the run's span. Span and trace ids are
// derived from run ids, so a run recovered by another process continues the
// same trace, and a sub-agent's run is a child of the tool call that
// started it. Since every span is drawn from journaled entries at their
// store-clock times, a trace never shows work that did not happen.
//
// Prompt and completion text is left out unless Options.Content is set, and
// then it passes through the secret redactor first.
package telemetry

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/secret"
	"github.com/hitch-dev/hitch/store"
)

// MaxOpenRuns bounds the runs whose spans are being assembled at once; past
// it the oldest is forgotten and rebuilt from its journal if it goes on.
const MaxOpenRuns = 10_000

// MaxRunEvents bounds the events kept on one run's span.
const MaxRunEvents = 128

// maxRebuild bounds the journal read to rebuild a run seen mid-way.
const maxRebuild = 10_000

// Options configure Telemetry.
type Options struct {
	// Store is read to learn a run's family and, for a run first seen
	// mid-way (recovered from another process), its earlier entries.
	// Required.
	Store store.Store
	// Exporter receives the spans; nil exports none.
	Exporter sdktrace.SpanExporter
	// SpanProcessorOptions tune the batching span processor.
	SpanProcessorOptions []sdktrace.BatchSpanProcessorOption
	// MeterProvider records metrics; nil records none.
	MeterProvider metric.MeterProvider
	// Content records model and tool text on spans, redacted by Redactor.
	Content bool
	// Redactor replaces secret values in every text recorded.
	Redactor *secret.Redactor
	// Models names the model of each agent, "provider/model", for span
	// names and attributes; see hitch's model.Model.Name.
	Models map[string]string
	// Resource describes the process (service.name and the like); nil
	// is the SDK's default.
	Resource *resource.Resource
}

// Telemetry draws traces and metrics from journal entries. It is safe for
// concurrent use.
type Telemetry struct {
	opts   Options
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer

	tokens   metric.Int64Histogram
	duration metric.Float64Histogram
	runs     metric.Int64Counter
	calls    metric.Int64Counter
	cost     metric.Float64Counter

	shutdown []func(context.Context) error // what FromEnv built

	mu    sync.Mutex
	open  map[string]*runTrack
	order []string // open runs, oldest first
}

type runTrack struct {
	id, root, parent, agent string
	started                 time.Time
	attempts                map[int]time.Time
	calls                   map[string]*callTrack
	events                  []sdktrace.Event
}

type callTrack struct {
	tool    string
	started time.Time
	verdict string
}

// New returns a Telemetry. Call Shutdown to flush spans.
func New(opts Options) (*Telemetry, error) {
	if opts.Store == nil {
		return nil, errors.New("telemetry: Options.Store is required")
	}
	t := &Telemetry{opts: opts, open: map[string]*runTrack{}}
	tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithIDGenerator(idGenerator{}), sdktrace.WithSampler(sdktrace.AlwaysSample())}
	if opts.Exporter != nil {
		tpOpts = append(tpOpts, sdktrace.WithBatcher(opts.Exporter, opts.SpanProcessorOptions...))
	}
	if opts.Resource != nil {
		tpOpts = append(tpOpts, sdktrace.WithResource(opts.Resource))
	}
	t.tp = sdktrace.NewTracerProvider(tpOpts...)
	t.tracer = t.tp.Tracer("github.com/hitch-dev/hitch")
	mp := opts.MeterProvider
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter("github.com/hitch-dev/hitch")
	var errs []error
	var err error
	t.tokens, err = m.Int64Histogram(metricTokenUsage, metric.WithUnit("{token}"), metric.WithDescription("Tokens used per model operation."),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304))
	errs = append(errs, err)
	t.duration, err = m.Float64Histogram(metricDuration, metric.WithUnit("s"), metric.WithDescription("Duration of model operations."),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92))
	errs = append(errs, err)
	t.runs, err = m.Int64Counter("hitch.runs.ended", metric.WithUnit("{run}"), metric.WithDescription("Runs ended, by agent and status."))
	errs = append(errs, err)
	t.calls, err = m.Int64Counter("hitch.tool.calls", metric.WithUnit("{call}"), metric.WithDescription("Tool calls finished, by tool and outcome (settled, failed, uncertain)."))
	errs = append(errs, err)
	t.cost, err = m.Float64Counter("hitch.cost", metric.WithUnit("USD"), metric.WithDescription("Priced model usage of ended runs, by agent."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	return t, nil
}

// Shutdown flushes and stops the span exporter (and the metric exporter
// FromEnv built), bounded by ctx.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	errs := []error{t.tp.Shutdown(ctx)}
	for _, f := range t.shutdown {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

// TraceID is the id of the trace of the family whose root run is rootID,
// in hex, as exported spans and log lines carry it.
func TraceID(rootID string) string { return traceOf(rootID).String() }

// ForceFlush exports the spans ended so far, bounded by ctx.
func (t *Telemetry) ForceFlush(ctx context.Context) error { return t.tp.ForceFlush(ctx) }

// Observe records entries a run has made durable, in journal order. It is
// meant for hitch.Config.OnEvent; it reads the store only for a run it has
// not seen start.
func (t *Telemetry) Observe(ctx context.Context, runID string, entries []store.Entry) {
	if len(entries) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.open[runID]
	if r == nil {
		var err error
		if r, err = t.rebuild(ctx, runID, entries[0].Pos); err != nil {
			return // the store is unreadable: drop these spans, never the run
		}
	}
	for _, e := range entries {
		t.apply(r, e, true)
	}
}

// track registers a run, forgetting the oldest past MaxOpenRuns.
func (t *Telemetry) track(r *runTrack) {
	if len(t.order) >= MaxOpenRuns {
		delete(t.open, t.order[0])
		t.order = t.order[1:]
	}
	t.open[r.id] = r
	t.order = append(t.order, r.id)
}

func (t *Telemetry) forget(id string) {
	delete(t.open, id)
	for i, o := range t.order {
		if o == id {
			t.order = append(t.order[:i], t.order[i+1:]...)
			break
		}
	}
}

// rebuild starts tracking a run: its family from the store, and, when the
// entries begin past the start, what came before them from its journal.
func (t *Telemetry) rebuild(ctx context.Context, runID string, from int64) (*runTrack, error) {
	run, err := t.opts.Store.RunGet(ctx, runID)
	if err != nil {
		return nil, err
	}
	r := &runTrack{id: runID, root: run.RootID, parent: run.ParentID, agent: run.Agent, started: run.CreatedAt,
		attempts: map[int]time.Time{}, calls: map[string]*callTrack{}}
	t.track(r)
	if from > 1 {
		earlier, err := t.opts.Store.JournalRead(ctx, store.JournalReadParams{RunID: runID, Limit: int(min(from-1, maxRebuild))})
		if err != nil {
			return nil, err
		}
		for _, e := range earlier {
			// State and events only: those spans were drawn by the
			// process that wrote the entries.
			t.apply(r, e, false)
		}
	}
	return r, nil
}

// note updates a run's state from an entry without drawing anything.
func (t *Telemetry) note(r *runTrack, e store.Entry) {
	switch e.Kind {
	case hitchtype.KindRunStarted:
		r.started = e.At
		var d hitchtype.RunStarted
		if json.Unmarshal(e.Data, &d) == nil && d.Agent != "" {
			r.agent = d.Agent
		}
	case hitchtype.KindModelAttempt:
		var d hitchtype.ModelAttempt
		if json.Unmarshal(e.Data, &d) == nil {
			r.attempts[d.Attempt] = e.At
		}
	case hitchtype.KindModelReply:
		var d hitchtype.ModelReply
		if json.Unmarshal(e.Data, &d) == nil {
			for i, tc := range d.Reply.ToolCalls {
				r.calls[fmt.Sprintf("t%dc%d", d.Turn, i+1)] = &callTrack{tool: tc.Name}
			}
		}
	case hitchtype.KindCallDecided:
		var d hitchtype.CallDecided
		if json.Unmarshal(e.Data, &d) == nil {
			r.call(d.Call).verdict = string(d.Verdict)
		}
	case hitchtype.KindCallStarted:
		var d hitchtype.CallStarted
		if json.Unmarshal(e.Data, &d) == nil {
			r.call(d.Call).started = e.At
		}
	}
}

func (r *runTrack) call(id string) *callTrack {
	c := r.calls[id]
	if c == nil {
		c = &callTrack{}
		r.calls[id] = c
	}
	return c
}

func (r *runTrack) event(name string, at time.Time, attrs ...attribute.KeyValue) {
	if len(r.events) < MaxRunEvents {
		r.events = append(r.events, sdktrace.Event{Name: name, Time: at, Attributes: attrs})
	}
}

// apply notes what an entry opens, adds its events to the run's span, and,
// when draw is set, draws the spans it closes.
func (t *Telemetry) apply(r *runTrack, e store.Entry, draw bool) {
	t.note(r, e)
	switch e.Kind {
	case hitchtype.KindModelReply:
		var d hitchtype.ModelReply
		if json.Unmarshal(e.Data, &d) == nil && draw {
			t.chatSpan(r, d.Attempt, d.Turn, e.At, &d.Reply, "", "")
		}
	case hitchtype.KindModelFailed:
		var d hitchtype.ModelFailed
		if json.Unmarshal(e.Data, &d) == nil {
			if draw {
				t.chatSpan(r, d.Attempt, 0, e.At, nil, string(d.Kind), d.Message)
			}
			r.event("model.retry", e.At, attrAttempt.Int(d.Attempt), attrErrorType.String(string(d.Kind)))
		}
	case hitchtype.KindModelLost:
		var d hitchtype.ModelInterrupted
		if json.Unmarshal(e.Data, &d) == nil && draw {
			t.chatSpan(r, d.Attempt, 0, e.At, nil, "interrupted", "the process stopped during the call")
		}
	case hitchtype.KindCallDecided:
		var d hitchtype.CallDecided
		if json.Unmarshal(e.Data, &d) == nil {
			attrs := []attribute.KeyValue{attrToolCallID.String(d.Call), attrVerdict.String(string(d.Verdict))}
			if c := r.calls[d.Call]; c != nil && c.tool != "" {
				attrs = append(attrs, attrToolName.String(c.tool))
			}
			if d.Reason != "" {
				attrs = append(attrs, attrMessage.String(t.text(d.Reason)))
			}
			r.event("policy.decision", e.At, attrs...)
		}
	case hitchtype.KindCallRejected:
		var d hitchtype.CallRejected
		if json.Unmarshal(e.Data, &d) == nil {
			r.event("call.rejected", e.At, attrToolCallID.String(d.Call), attrMessage.String(t.text(d.Error)))
		}
	case hitchtype.KindCallSettled, hitchtype.KindCallFailed, hitchtype.KindCallUncertain:
		var d struct {
			Call   string `json:"call"`
			Error  string `json:"error"`
			Reason string `json:"reason"`
		}
		if json.Unmarshal(e.Data, &d) == nil && draw {
			t.toolSpan(r, d.Call, e, d.Error+d.Reason)
		}
	case hitchtype.KindApprovalGrant, hitchtype.KindApprovalDeny, hitchtype.KindApprovalLapse, hitchtype.KindCallReconcile:
		var d struct {
			Call string `json:"call"`
			By   string `json:"by"`
		}
		if json.Unmarshal(e.Data, &d) == nil {
			r.event(e.Kind, e.At, attrToolCallID.String(d.Call), attribute.String("hitch.by", d.By))
		}
	case hitchtype.KindRunWaiting:
		var d hitchtype.RunWaiting
		if json.Unmarshal(e.Data, &d) == nil {
			r.event("run.waiting", e.At, attribute.String("hitch.wait.reason", d.Reason), attribute.StringSlice("hitch.wait.calls", d.Calls))
		}
	case hitchtype.KindRunEnded:
		var d hitchtype.Outcome
		if json.Unmarshal(e.Data, &d) == nil && draw {
			t.runSpan(r, e.At, &d)
		}
		t.forget(r.id)
	}
}

func (t *Telemetry) text(s string) string { return t.opts.Redactor.String(s) }

// provider splits "provider/model" names.
func (t *Telemetry) model(r *runTrack, replied string) (provider, model string) {
	name := t.opts.Models[r.agent]
	provider, model, ok := strings.Cut(name, "/")
	if !ok {
		provider, model = "", name
	}
	if model == "" {
		model = replied
	}
	return provider, model
}

// spanCtx returns a context that makes the next span get the given ids,
// under the given parent span (none for a root).
func spanCtx(traceID trace.TraceID, parent, self trace.SpanID) context.Context {
	ctx := context.WithValue(context.Background(), idKey{}, self)
	if parent.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: traceID, SpanID: parent, TraceFlags: trace.FlagsSampled, Remote: true,
		}))
	} else {
		ctx = context.WithValue(ctx, traceKey{}, traceID)
	}
	return ctx
}

// The ids of a family's spans, derived from run ids and call keys.
func traceOf(rootID string) trace.TraceID {
	var id trace.TraceID
	h := sha256.Sum256([]byte("hitch/trace/" + rootID))
	copy(id[:], h[:])
	return id
}

func spanOf(parts ...string) trace.SpanID {
	var id trace.SpanID
	h := sha256.Sum256([]byte("hitch/span/" + strings.Join(parts, "\x00")))
	copy(id[:], h[:])
	return id
}

func runSpanID(runID string) trace.SpanID            { return spanOf(runID, "run") }
func callSpanID(runID, call string) trace.SpanID     { return spanOf(runID, "call", call) }
func attemptSpanID(runID string, n int) trace.SpanID { return spanOf(runID, "attempt", fmt.Sprint(n)) }

func (t *Telemetry) chatSpan(r *runTrack, attempt, turn int, end time.Time, reply *modelReply, errType, errMsg string) {
	start, ok := r.attempts[attempt]
	if !ok {
		start = end
	}
	replied := ""
	if reply != nil {
		replied = reply.Model
	}
	provider, model := t.model(r, replied)
	name := opChat
	if model != "" {
		name += " " + model
	}
	attrs := []attribute.KeyValue{attrOperation.String(opChat), attrRunID.String(r.id), attrAttempt.Int(attempt)}
	if provider != "" {
		attrs = append(attrs, attrProvider.String(provider))
	}
	if model != "" {
		attrs = append(attrs, attrRequestModel.String(model))
	}
	if turn > 0 {
		attrs = append(attrs, attrTurn.Int(turn))
	}
	mattrs := []attribute.KeyValue{attrOperation.String(opChat), attrProvider.String(provider), attrRequestModel.String(model)}
	if reply != nil {
		if reply.Model != "" {
			attrs = append(attrs, attrResponseModel.String(reply.Model))
		}
		if reply.StopReason != "" {
			attrs = append(attrs, attrFinishReasons.StringSlice([]string{reply.StopReason}))
		}
		if u := reply.Usage; u != nil {
			if u.InputTokens != nil {
				attrs = append(attrs, attrInputTokens.Int64(*u.InputTokens))
				t.tokens.Record(context.Background(), *u.InputTokens, metric.WithAttributes(append(mattrs, attrTokenType.String("input"))...))
			}
			if u.OutputTokens != nil {
				attrs = append(attrs, attrOutputTokens.Int64(*u.OutputTokens))
				t.tokens.Record(context.Background(), *u.OutputTokens, metric.WithAttributes(append(mattrs, attrTokenType.String("output"))...))
			}
		}
		if t.opts.Content && reply.Text != "" {
			attrs = append(attrs, attribute.String("gen_ai.output.text", t.text(reply.Text)))
		}
	}
	if errType != "" {
		attrs = append(attrs, attrErrorType.String(errType))
		mattrs = append(mattrs, attrErrorType.String(errType))
	}
	t.duration.Record(context.Background(), end.Sub(start).Seconds(), metric.WithAttributes(mattrs...))
	ctx := spanCtx(traceOf(r.root), runSpanID(r.id), attemptSpanID(r.id, attempt))
	_, sp := t.tracer.Start(ctx, name, trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if errType != "" {
		sp.SetStatus(codes.Error, t.text(errMsg))
	}
	sp.End(trace.WithTimestamp(end))
}

func (t *Telemetry) toolSpan(r *runTrack, call string, e store.Entry, errText string) {
	c := r.call(call)
	start := c.started
	if start.IsZero() {
		start = e.At
	}
	outcome := strings.TrimPrefix(e.Kind, "call.")
	name := opExecuteTool
	if c.tool != "" {
		name += " " + c.tool
	}
	attrs := []attribute.KeyValue{attrOperation.String(opExecuteTool), attrToolName.String(c.tool), attrToolCallID.String(call),
		attrRunID.String(r.id), attrOutcome.String(outcome)}
	if c.verdict != "" {
		attrs = append(attrs, attrVerdict.String(c.verdict))
	}
	t.calls.Add(context.Background(), 1, metric.WithAttributes(attrToolName.String(c.tool), attrOutcome.String(outcome)))
	ctx := spanCtx(traceOf(r.root), runSpanID(r.id), callSpanID(r.id, call))
	_, sp := t.tracer.Start(ctx, name, trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	if e.Kind != hitchtype.KindCallSettled {
		sp.SetStatus(codes.Error, t.text(errText))
	}
	sp.End(trace.WithTimestamp(e.At))
}

func (t *Telemetry) runSpan(r *runTrack, end time.Time, o *hitchtype.Outcome) {
	attrs := []attribute.KeyValue{attrOperation.String(opInvokeAgent), attrAgentName.String(r.agent), attrAgentID.String(r.agent),
		attrRunID.String(r.id), attrRootID.String(r.root), attrStatus.String(string(o.Status))}
	if provider, model := t.model(r, ""); model != "" {
		attrs = append(attrs, attrRequestModel.String(model), attrProvider.String(provider))
	}
	if o.Reason != "" {
		attrs = append(attrs, attrReason.String(o.Reason))
	}
	if o.Usage.InputTokens != nil {
		attrs = append(attrs, attrInputTokens.Int64(*o.Usage.InputTokens))
	}
	if o.Usage.OutputTokens != nil {
		attrs = append(attrs, attrOutputTokens.Int64(*o.Usage.OutputTokens))
	}
	if o.CostUSD != nil {
		attrs = append(attrs, attrCostUSD.Float64(*o.CostUSD))
		t.cost.Add(context.Background(), *o.CostUSD, metric.WithAttributes(attrAgentName.String(r.agent)))
	}
	if t.opts.Content && o.Answer != "" {
		attrs = append(attrs, attribute.String("gen_ai.output.text", t.text(o.Answer)))
	}
	t.runs.Add(context.Background(), 1, metric.WithAttributes(attrAgentName.String(r.agent), attrStatus.String(string(o.Status))))
	var parent trace.SpanID
	if r.parent != "" {
		parent = callSpanID(r.parent, strings.TrimPrefix(r.id, r.parent+"."))
	}
	ctx := spanCtx(traceOf(r.root), parent, runSpanID(r.id))
	_, sp := t.tracer.Start(ctx, opInvokeAgent+" "+r.agent, trace.WithTimestamp(r.started), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	for _, ev := range r.events {
		sp.AddEvent(ev.Name, trace.WithTimestamp(ev.Time), trace.WithAttributes(ev.Attributes...))
	}
	if o.Status != hitchtype.StatusCompleted {
		sp.SetStatus(codes.Error, t.text(cmpOr(o.Error, o.Reason, string(o.Status))))
	}
	sp.End(trace.WithTimestamp(end))
}

func cmpOr(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
