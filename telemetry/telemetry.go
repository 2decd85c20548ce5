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
	"container/list"
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
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
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
	// Exporter receives the spans; with nil none are drawn.
	Exporter sdktrace.SpanExporter
	// SpanProcessorOptions tune the batching span processor.
	SpanProcessorOptions []sdktrace.BatchSpanProcessorOption
	// MeterProvider records metrics; nil records none.
	MeterProvider metric.MeterProvider
	// MetricReaders are read by the MeterProvider FromEnv builds, beside
	// the OTLP exporter when the variables ask for one (see
	// PrometheusReader); with readers, FromEnv builds a Telemetry even
	// when the variables ask for no export.
	MetricReaders []sdkmetric.Reader
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
// concurrent use: entries are decoded outside any lock, and one run's
// entries are applied under that run's own lock.
type Telemetry struct {
	opts   Options
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer

	// spans and metered say whether drawn spans go anywhere and whether
	// metrics are recorded; with neither, Observe does nothing.
	spans, metered bool

	tokens   metric.Int64Histogram
	duration metric.Float64Histogram
	runs     metric.Int64Counter
	calls    metric.Int64Counter
	cost     metric.Float64Counter

	shutdown []func(context.Context) error // what FromEnv built

	mu    sync.Mutex // guards open and order, never held while waiting on a run
	open  map[string]*runTrack
	order list.List // of *runTrack, oldest first
}

type runTrack struct {
	mu      sync.Mutex    // held while the run's entries are applied
	elem    *list.Element // its place in Telemetry.order; nil once forgotten; guarded by Telemetry.mu
	broken  bool          // its earlier entries could not be read: dropped
	id      string
	root    string
	parent  string
	agent   string
	started time.Time
	// trace and span are the ids of the run's trace and span.
	trace trace.TraceID
	span  trace.SpanID

	attempts map[int]time.Time
	calls    map[string]*callTrack
	events   []sdktrace.Event
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
	t := &Telemetry{opts: opts, open: map[string]*runTrack{}, spans: opts.Exporter != nil, metered: opts.MeterProvider != nil}
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
// not seen start. With neither an exporter nor a meter provider it returns
// at once: nothing it could draw would go anywhere.
func (t *Telemetry) Observe(ctx context.Context, runID string, entries []store.Entry) {
	if len(entries) == 0 || (!t.spans && !t.metered) {
		return
	}
	facts := make([]fact, 0, len(entries))
	for _, e := range entries {
		if f, ok := t.decode(e); ok {
			facts = append(facts, f)
		}
	}
	if len(facts) == 0 {
		return // nothing here opens, closes or marks anything
	}
	r, fresh := t.lookup(runID)
	defer r.mu.Unlock()
	if fresh {
		if err := t.rebuild(ctx, r, entries[0].Pos); err != nil {
			r.broken = true // the store is unreadable: drop these spans, never the run
			t.forget(r)
			return
		}
	}
	if r.broken {
		return
	}
	for i := range facts {
		t.apply(r, &facts[i], true)
	}
}

// lookup returns a run's track, locked, registering a new one (fresh)
// when the run is not tracked; past MaxOpenRuns the oldest is forgotten.
// A fresh track is locked before anyone else can see it, so its rebuild
// comes before any other batch of the run.
func (t *Telemetry) lookup(runID string) (r *runTrack, fresh bool) {
	t.mu.Lock()
	r = t.open[runID]
	if r == nil {
		r = &runTrack{id: runID, attempts: map[int]time.Time{}, calls: map[string]*callTrack{}}
		r.mu.Lock() // nobody else holds it: it is not in the map yet
		if t.order.Len() >= MaxOpenRuns {
			old := t.order.Remove(t.order.Front()).(*runTrack)
			delete(t.open, old.id)
			old.elem = nil
		}
		r.elem = t.order.PushBack(r)
		t.open[runID] = r
		t.mu.Unlock()
		return r, true
	}
	t.mu.Unlock()
	r.mu.Lock()
	return r, false
}

// forget stops tracking a run, if it still is.
func (t *Telemetry) forget(r *runTrack) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.elem != nil {
		t.order.Remove(r.elem)
		r.elem = nil
		if t.open[r.id] == r {
			delete(t.open, r.id)
		}
	}
}

// rebuild fills a fresh track: the run's family from the store, and, when
// the entries begin past the start, what came before them from its journal.
// A run seen from its start whose id has no "." is a root (a sub-agent's
// run is named parent.call): its start tells all, and the store is not read.
func (t *Telemetry) rebuild(ctx context.Context, r *runTrack, from int64) error {
	if from == 1 && !strings.Contains(r.id, ".") {
		r.root = r.id
		r.trace, r.span = traceOf(r.root), runSpanID(r.id)
		return nil
	}
	run, err := t.opts.Store.RunGet(ctx, r.id)
	if err != nil {
		return err
	}
	r.root, r.parent, r.agent, r.started = run.RootID, run.ParentID, run.Agent, run.CreatedAt
	r.trace, r.span = traceOf(r.root), runSpanID(r.id)
	if from > 1 {
		earlier, err := t.opts.Store.JournalRead(ctx, store.JournalReadParams{RunID: r.id, Limit: int(min(from-1, maxRebuild))})
		if err != nil {
			return err
		}
		for _, e := range earlier {
			// State and events only: those spans were drawn by the
			// process that wrote the entries.
			if f, ok := t.decode(e); ok {
				t.apply(r, &f, false)
			}
		}
	}
	return nil
}

// fact is what telemetry reads from one journal entry: its kind and time
// and the few fields of its data that open, close or mark a span.
type fact struct {
	kind string
	at   time.Time
	data entryData
	// text is the model's reply text or the run's answer, read only when
	// Options.Content asks for it.
	text string
}

// entryData holds the fields telemetry reads from the kinds it uses (see
// decode); decoding skips the rest of an entry (arguments, tool output,
// history) without keeping it. No two of those kinds give one name two
// types.
type entryData struct {
	Agent   string     `json:"agent"`   // run.started
	Attempt int        `json:"attempt"` // model.*
	Turn    int        `json:"turn"`    // model.reply
	Reply   *replyData `json:"reply"`   // model.reply
	Kind    string     `json:"kind"`    // model.failed
	Message string     `json:"message"` // model.failed
	TookMS  int64      `json:"took_ms"` // model.reply, model.failed
	Call    string     `json:"call"`    // call.*, approval.*
	Verdict string     `json:"verdict"` // call.decided
	Reason  string     `json:"reason"`  // call.decided, call.uncertain, run.waiting, run.ended
	Error   string     `json:"error"`   // call.rejected, call.failed, run.ended
	By      string     `json:"by"`      // approval.*, call.reconciled
	Calls   []string   `json:"calls"`   // run.waiting
	Status  string     `json:"status"`  // run.ended
	Usage   usageData  `json:"usage"`   // run.ended
	CostUSD *float64   `json:"cost_usd"`
}

type replyData struct {
	Model      string     `json:"model"`
	StopReason string     `json:"stop_reason"`
	Usage      *usageData `json:"usage"`
	ToolCalls  []struct {
		Name string `json:"name"`
	} `json:"tool_calls"`
}

// took is a model call's own measure of its time.
func (d *entryData) took() time.Duration { return time.Duration(d.TookMS) * time.Millisecond }

type usageData struct {
	InputTokens  *int64 `json:"input_tokens"`
	OutputTokens *int64 `json:"output_tokens"`
}

// decode reads an entry of a kind that telemetry uses; ok is false for
// the other kinds and for data that does not decode.
func (t *Telemetry) decode(e store.Entry) (f fact, ok bool) {
	switch e.Kind {
	case hitchtype.KindRunStarted, hitchtype.KindModelAttempt, hitchtype.KindModelReply, hitchtype.KindModelFailed,
		hitchtype.KindModelLost, hitchtype.KindCallDecided, hitchtype.KindCallRejected, hitchtype.KindCallStarted,
		hitchtype.KindCallSettled, hitchtype.KindCallFailed, hitchtype.KindCallUncertain, hitchtype.KindRunEnded:
	case hitchtype.KindApprovalGrant, hitchtype.KindApprovalDeny, hitchtype.KindApprovalLapse, hitchtype.KindCallReconcile,
		hitchtype.KindRunWaiting, hitchtype.KindCallLost:
		if !t.spans {
			return f, false // they only mark the run's span
		}
	default:
		return f, false
	}
	f.kind, f.at = e.Kind, e.At
	if json.Unmarshal(e.Data, &f.data) != nil {
		return f, false
	}
	if t.opts.Content && t.spans && (e.Kind == hitchtype.KindModelReply || e.Kind == hitchtype.KindRunEnded) {
		var c struct {
			Reply struct {
				Text string `json:"text"`
			} `json:"reply"`
			Answer string `json:"answer"`
		}
		if json.Unmarshal(e.Data, &c) == nil {
			f.text = c.Reply.Text + c.Answer
		}
	}
	return f, true
}

// note updates a run's state from an entry without drawing anything.
func (t *Telemetry) note(r *runTrack, f *fact) {
	d := &f.data
	switch f.kind {
	case hitchtype.KindRunStarted:
		r.started = f.at
		if d.Agent != "" {
			r.agent = d.Agent
		}
	case hitchtype.KindModelAttempt:
		r.attempts[d.Attempt] = f.at
	case hitchtype.KindModelReply:
		if d.Reply != nil {
			for i, tc := range d.Reply.ToolCalls {
				r.calls[fmt.Sprintf("t%dc%d", d.Turn, i+1)] = &callTrack{tool: tc.Name}
			}
		}
	case hitchtype.KindCallDecided:
		r.call(d.Call).verdict = d.Verdict
	case hitchtype.KindCallStarted:
		r.call(d.Call).started = f.at
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

func (t *Telemetry) event(r *runTrack, name string, at time.Time, attrs ...attribute.KeyValue) {
	if t.spans && len(r.events) < MaxRunEvents {
		r.events = append(r.events, sdktrace.Event{Name: name, Time: at, Attributes: attrs})
	}
}

// apply notes what an entry opens, adds its events to the run's span, and,
// when draw is set, draws the spans and records the metrics it closes.
func (t *Telemetry) apply(r *runTrack, f *fact, draw bool) {
	t.note(r, f)
	d := &f.data
	switch f.kind {
	case hitchtype.KindModelReply:
		if draw && d.Reply != nil {
			t.chatSpan(r, d.Attempt, d.Turn, f.at, d.took(), d.Reply, f.text, "", "")
		}
	case hitchtype.KindModelFailed:
		if draw {
			t.chatSpan(r, d.Attempt, 0, f.at, d.took(), nil, "", d.Kind, d.Message)
		}
		t.event(r, "model.retry", f.at, attrAttempt.Int(d.Attempt), attrErrorType.String(d.Kind))
	case hitchtype.KindModelLost:
		if draw {
			t.chatSpan(r, d.Attempt, 0, f.at, 0, nil, "", "interrupted", "the process stopped during the call")
		}
	case hitchtype.KindCallDecided:
		if t.spans {
			attrs := []attribute.KeyValue{attrToolCallID.String(d.Call), attrVerdict.String(d.Verdict)}
			if c := r.calls[d.Call]; c != nil && c.tool != "" {
				attrs = append(attrs, attrToolName.String(c.tool))
			}
			if d.Reason != "" {
				attrs = append(attrs, attrMessage.String(t.text(d.Reason)))
			}
			t.event(r, "policy.decision", f.at, attrs...)
		}
	case hitchtype.KindCallRejected:
		if t.spans {
			t.event(r, "call.rejected", f.at, attrToolCallID.String(d.Call), attrMessage.String(t.text(d.Error)))
		}
	case hitchtype.KindCallSettled, hitchtype.KindCallFailed, hitchtype.KindCallUncertain:
		if draw {
			t.toolSpan(r, d.Call, f.kind, f.at, d.Error+d.Reason)
		}
	case hitchtype.KindCallLost:
		if t.spans {
			t.event(r, "call.lost", f.at, attrToolCallID.String(d.Call), attrMessage.String(t.text(d.Reason)))
		}
	case hitchtype.KindApprovalGrant, hitchtype.KindApprovalDeny, hitchtype.KindApprovalLapse, hitchtype.KindCallReconcile:
		t.event(r, f.kind, f.at, attrToolCallID.String(d.Call), attribute.String("hitch.by", d.By))
	case hitchtype.KindRunWaiting:
		t.event(r, "run.waiting", f.at, attribute.String("hitch.wait.reason", d.Reason), attribute.StringSlice("hitch.wait.calls", d.Calls))
	case hitchtype.KindRunEnded:
		if draw {
			t.runSpan(r, f)
		}
		t.forget(r)
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

// chatSpan draws a model call's span, from its attempt's entry to its end,
// or for took (the call's own measure) before its end when the attempt was
// journaled with the reply, in one commit.
func (t *Telemetry) chatSpan(r *runTrack, attempt, turn int, end time.Time, took time.Duration, reply *replyData, text, errType, errMsg string) {
	start, ok := r.attempts[attempt]
	if !ok {
		start = end
	}
	if took > 0 && !start.Before(end) {
		start = end.Add(-took)
	}
	replied := ""
	if reply != nil {
		replied = reply.Model
	}
	provider, model := t.model(r, replied)
	if t.metered {
		mattrs := []attribute.KeyValue{attrOperation.String(opChat), attrProvider.String(provider), attrRequestModel.String(model)}
		if reply != nil && reply.Usage != nil {
			if n := reply.Usage.InputTokens; n != nil {
				t.tokens.Record(context.Background(), *n, metric.WithAttributes(append(mattrs, attrTokenType.String("input"))...))
			}
			if n := reply.Usage.OutputTokens; n != nil {
				t.tokens.Record(context.Background(), *n, metric.WithAttributes(append(mattrs, attrTokenType.String("output"))...))
			}
		}
		if errType != "" {
			mattrs = append(mattrs, attrErrorType.String(errType))
		}
		t.duration.Record(context.Background(), end.Sub(start).Seconds(), metric.WithAttributes(mattrs...))
	}
	if !t.spans {
		return
	}
	name := opChat
	if model != "" {
		name += " " + model
	}
	attrs := make([]attribute.KeyValue, 0, 12)
	attrs = append(attrs, attrOperation.String(opChat), attrRunID.String(r.id), attrAttempt.Int(attempt))
	if provider != "" {
		attrs = append(attrs, attrProvider.String(provider))
	}
	if model != "" {
		attrs = append(attrs, attrRequestModel.String(model))
	}
	if turn > 0 {
		attrs = append(attrs, attrTurn.Int(turn))
	}
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
			}
			if u.OutputTokens != nil {
				attrs = append(attrs, attrOutputTokens.Int64(*u.OutputTokens))
			}
		}
		if t.opts.Content && text != "" {
			attrs = append(attrs, attribute.String("gen_ai.output.text", t.text(text)))
		}
	}
	if errType != "" {
		attrs = append(attrs, attrErrorType.String(errType))
	}
	ctx := spanCtx(r.trace, r.span, attemptSpanID(r.id, attempt))
	_, sp := t.tracer.Start(ctx, name, trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if errType != "" {
		sp.SetStatus(codes.Error, t.text(errMsg))
	}
	sp.End(trace.WithTimestamp(end))
}

func (t *Telemetry) toolSpan(r *runTrack, call, kind string, end time.Time, errText string) {
	c := r.call(call)
	outcome := strings.TrimPrefix(kind, "call.")
	if t.metered {
		t.calls.Add(context.Background(), 1, metric.WithAttributes(attrToolName.String(c.tool), attrOutcome.String(outcome)))
	}
	if !t.spans {
		return
	}
	start := c.started
	if start.IsZero() {
		start = end
	}
	name := opExecuteTool
	if c.tool != "" {
		name += " " + c.tool
	}
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, attrOperation.String(opExecuteTool), attrToolName.String(c.tool), attrToolCallID.String(call),
		attrRunID.String(r.id), attrOutcome.String(outcome))
	if c.verdict != "" {
		attrs = append(attrs, attrVerdict.String(c.verdict))
	}
	ctx := spanCtx(r.trace, r.span, callSpanID(r.id, call))
	_, sp := t.tracer.Start(ctx, name, trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	if kind != hitchtype.KindCallSettled {
		sp.SetStatus(codes.Error, t.text(errText))
	}
	sp.End(trace.WithTimestamp(end))
}

func (t *Telemetry) runSpan(r *runTrack, f *fact) {
	o := &f.data
	if t.metered {
		if o.CostUSD != nil {
			t.cost.Add(context.Background(), *o.CostUSD, metric.WithAttributes(attrAgentName.String(r.agent)))
		}
		t.runs.Add(context.Background(), 1, metric.WithAttributes(attrAgentName.String(r.agent), attrStatus.String(o.Status)))
	}
	if !t.spans {
		return
	}
	attrs := []attribute.KeyValue{attrOperation.String(opInvokeAgent), attrAgentName.String(r.agent), attrAgentID.String(r.agent),
		attrRunID.String(r.id), attrRootID.String(r.root), attrStatus.String(o.Status)}
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
	}
	if t.opts.Content && f.text != "" {
		attrs = append(attrs, attribute.String("gen_ai.output.text", t.text(f.text)))
	}
	var parent trace.SpanID
	if r.parent != "" {
		parent = callSpanID(r.parent, strings.TrimPrefix(r.id, r.parent+"."))
	}
	ctx := spanCtx(r.trace, parent, r.span)
	_, sp := t.tracer.Start(ctx, opInvokeAgent+" "+r.agent, trace.WithTimestamp(r.started), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	for _, ev := range r.events {
		sp.AddEvent(ev.Name, trace.WithTimestamp(ev.Time), trace.WithAttributes(ev.Attributes...))
	}
	if o.Status != string(hitchtype.StatusCompleted) {
		sp.SetStatus(codes.Error, t.text(cmpOr(o.Error, o.Reason, o.Status)))
	}
	sp.End(trace.WithTimestamp(f.at))
}

func cmpOr(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
