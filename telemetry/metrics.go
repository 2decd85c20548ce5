package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model/route"
	"github.com/hitch-dev/hitch/store"
)

// DefaultMetricsCache is how long one reading of the store for hitch's
// gauges serves collections (scrapes, OTLP exports) before the next
// collection reads again.
const DefaultMetricsCache = 5 * time.Second

// MaxMetricsCache bounds MetricsOptions.CacheFor.
const MaxMetricsCache = time.Hour

// MaxMetricsScan bounds the waiting runs one reading of the gauges looks
// at (newest first); past it the pending-approval and uncertain-call
// gauges count those runs only. (For a store that is not a
// store.GaugeReader, it bounds the running and waiting runs looked at,
// and the due runs are counted among them.)
const MaxMetricsScan = store.MaxListLimit

// MetricsReadTimeout bounds one reading of the store for the gauges.
const MetricsReadTimeout = 5 * time.Second

// Operations of Metrics.StoreTiming, as hitch.Config.OnStoreTiming names
// them.
const (
	timingClaim  = "claim"
	timingAppend = "append"
)

// MetricsOptions configure Metrics.
type MetricsOptions struct {
	// Store is read for the gauges (runs by status, due runs, pending
	// approvals, uncertain calls) when metrics are collected. Required.
	Store store.Store
	// MeterProvider records the metrics; nil records none.
	MeterProvider metric.MeterProvider
	// CacheFor is how long one reading of the store serves collections:
	// 0 means DefaultMetricsCache, a negative value reads at every
	// collection; at most MaxMetricsCache.
	CacheFor time.Duration
	// NoGauges leaves the gauges out: only the latency of store
	// operations is recorded, and the store is never read for metrics
	// (for a short-lived command; a node's gauges say the same).
	NoGauges bool
	// Routes are the node's model routes, whose breakers are reported
	// (hitch.route.breaker.open and .failures, by route and model). They
	// are read from memory, never from the store. Default none.
	Routes []*route.Route
}

// Metrics are hitch's own metrics of a node: gauges read from the store
// when they are collected (one bounded reading, cached, however many
// collect), and the latency of the store operations its runners make,
// through StoreTiming. It is safe for concurrent use.
type Metrics struct {
	st       store.Store
	cacheFor time.Duration

	claim       metric.Float64Histogram
	append      metric.Float64Histogram
	batch       metric.Int64Histogram
	runs        metric.Int64ObservableGauge
	due         metric.Int64ObservableGauge
	approvals   metric.Int64ObservableGauge
	uncertain   metric.Int64ObservableGauge
	scanned     metric.Int64ObservableGauge
	reg         metric.Registration
	breakers    metric.Registration
	statusAttrs map[hitchtype.Status]metric.ObserveOption

	mu   sync.Mutex
	last gauges
	at   time.Time // when last was read; zero before the first
}

// gauges is one reading of the store.
type gauges struct {
	byStatus  map[hitchtype.Status]int
	due       int
	approvals int
	uncertain int
	scanned   int
}

var allStatuses = []hitchtype.Status{hitchtype.StatusQueued, hitchtype.StatusRunning, hitchtype.StatusWaiting,
	hitchtype.StatusCompleted, hitchtype.StatusFailed, hitchtype.StatusCancelled, hitchtype.StatusAnswerInvalid,
	hitchtype.StatusBudgetExhausted}

// NewMetrics creates hitch's own instruments on opts.MeterProvider. Pass
// StoreTiming as hitch.Config.OnStoreTiming; call Close to stop reading
// the store.
func NewMetrics(opts MetricsOptions) (*Metrics, error) {
	switch {
	case opts.Store == nil:
		return nil, errors.New("telemetry: MetricsOptions.Store is required")
	case opts.CacheFor > MaxMetricsCache:
		return nil, fmt.Errorf("telemetry: MetricsOptions.CacheFor %s: at most %s", opts.CacheFor, MaxMetricsCache)
	case opts.CacheFor == 0:
		opts.CacheFor = DefaultMetricsCache
	case opts.CacheFor < 0:
		opts.CacheFor = 0
	}
	mp := opts.MeterProvider
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := &Metrics{st: opts.Store, cacheFor: opts.CacheFor, statusAttrs: map[hitchtype.Status]metric.ObserveOption{}}
	for _, s := range allStatuses {
		m.statusAttrs[s] = metric.WithAttributes(attrStatus.String(string(s)))
	}
	meter := mp.Meter("github.com/hitch-dev/hitch")
	latency := metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
	var errs []error
	var err error
	m.claim, err = meter.Float64Histogram("hitch.claim.duration", metric.WithUnit("s"), latency,
		metric.WithDescription("Time one lease claim took in the store, by result."))
	errs = append(errs, err)
	m.append, err = meter.Float64Histogram("hitch.journal.append.duration", metric.WithUnit("s"), latency,
		metric.WithDescription("Time one journal append (a commit of a batch of entries) took in the store, by result."))
	errs = append(errs, err)
	m.batch, err = meter.Int64Histogram("hitch.journal.append.entries", metric.WithUnit("{entry}"),
		metric.WithExplicitBucketBoundaries(1, 2, 4, 8, 16, 32, 64, 128, 256),
		metric.WithDescription("Entries of one journal append."))
	errs = append(errs, err)
	errs = append(errs, newGauges(meter,
		gauge{&m.runs, "hitch.runs", "{run}", "Runs in the store, by status."},
		gauge{&m.due, "hitch.runs.due", "{run}", "Runs ready to be claimed: queued, running without a live lease, or waiting with their wake come."},
		gauge{&m.approvals, "hitch.approvals.pending", "{request}", "Approval requests waiting for an answer."},
		gauge{&m.uncertain, "hitch.calls.uncertain", "{call}", "Tool calls of unknown outcome waiting to be reconciled."},
		gauge{&m.scanned, "hitch.metrics.scanned", "{run}", "Waiting runs the last reading looked at; at MaxMetricsScan the approval and uncertain gauges are lower bounds."},
	))
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	if len(opts.Routes) > 0 {
		if m.breakers, err = breakerGauges(meter, opts.Routes); err != nil {
			return nil, fmt.Errorf("telemetry: %w", err)
		}
	}
	if opts.NoGauges {
		return m, nil
	}
	m.reg, err = meter.RegisterCallback(m.observe, m.runs, m.due, m.approvals, m.uncertain, m.scanned)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	return m, nil
}

// breakerGauges reports each route's breakers: open (1) or closed (0),
// and the moving failures since each model last answered.
func breakerGauges(meter metric.Meter, routes []*route.Route) (metric.Registration, error) {
	var open, failures metric.Int64ObservableGauge
	err := newGauges(meter,
		gauge{&open, "hitch.route.breaker.open", "1", "1 while a route passes over a model that failed with a class that moves on (its cool-down), else 0; by route and model."},
		gauge{&failures, "hitch.route.breaker.failures", "{failure}", "Failures of a moving class since a route's model last answered; by route and model."},
	)
	if err != nil {
		return nil, err
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, r := range routes {
			for _, b := range r.Breakers() {
				attrs := metric.WithAttributes(attrRoute.String(r.Name()), attrRouteModel.String(b.Model))
				v := int64(0)
				if b.Open {
					v = 1
				}
				o.ObserveInt64(open, v, attrs)
				o.ObserveInt64(failures, int64(b.Failures), attrs)
			}
		}
		return nil
	}, open, failures)
}

// gauge is one of hitch's gauges: where it is kept, its name, unit and
// description.
type gauge struct {
	dst               *metric.Int64ObservableGauge
	name, unit, about string
}

// newGauges creates gauges on meter, each into its dst.
func newGauges(meter metric.Meter, gauges ...gauge) error {
	var errs []error
	for _, g := range gauges {
		var err error
		*g.dst, err = meter.Int64ObservableGauge(g.name, metric.WithUnit(g.unit), metric.WithDescription(g.about))
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Close stops the gauges' readings of the store.
func (m *Metrics) Close() error {
	var err error
	if m.breakers != nil {
		err = m.breakers.Unregister()
	}
	if m.reg != nil {
		err = errors.Join(err, m.reg.Unregister())
	}
	return err
}

// StoreTiming records one store operation of a runner; its signature is
// hitch.Config.OnStoreTiming's.
func (m *Metrics) StoreTiming(op string, took time.Duration, n int, err error) {
	ctx := context.Background()
	attrs := metric.WithAttributes(attrResult.String(resultOf(err)))
	switch op {
	case timingClaim:
		m.claim.Record(ctx, took.Seconds(), attrs)
	case timingAppend:
		m.append.Record(ctx, took.Seconds(), attrs)
		if err == nil {
			m.batch.Record(ctx, int64(n))
		}
	}
}

// resultOf names an operation's result, from a bounded set.
func resultOf(err error) string {
	var be *store.BudgetExhaustedError
	var held *store.LeaseHeldError
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, store.ErrFenced):
		return "fenced"
	case errors.Is(err, store.ErrConflict):
		return "conflict"
	case errors.Is(err, store.ErrEnded):
		return "ended"
	case errors.Is(err, store.ErrNotFound):
		return "not_found"
	case errors.As(err, &be):
		return "budget_exhausted"
	case errors.As(err, &held):
		return "lease_held"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "timeout"
	}
	return "error"
}

func (m *Metrics) observe(ctx context.Context, o metric.Observer) error {
	g, err := m.reading(ctx)
	if err != nil {
		return err
	}
	for _, s := range allStatuses {
		o.ObserveInt64(m.runs, int64(g.byStatus[s]), m.statusAttrs[s])
	}
	o.ObserveInt64(m.due, int64(g.due))
	o.ObserveInt64(m.approvals, int64(g.approvals))
	o.ObserveInt64(m.uncertain, int64(g.uncertain))
	o.ObserveInt64(m.scanned, int64(g.scanned))
	return nil
}

// reading returns the last reading while it is fresh, or reads the store
// again. Concurrent collections wait for one reading.
func (m *Metrics) reading(ctx context.Context) (gauges, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.at.IsZero() && time.Since(m.at) < m.cacheFor {
		return m.last, nil
	}
	ctx, cancel := context.WithTimeout(ctx, MetricsReadTimeout)
	defer cancel()
	g, err := m.read(ctx)
	if err != nil {
		return gauges{}, fmt.Errorf("telemetry: read gauges: %w", err)
	}
	m.last, m.at = g, time.Now()
	return g, nil
}

// read counts runs by status in one query, then due runs and what parked
// runs wait on: a run parks with run.waiting, which names the approvals or
// uncertain calls it waits on. A store.GaugeReader answers each in one
// statement; another store is read through the newest running and waiting
// runs, at most MaxMetricsScan of them, and the last entry of each
// waiting one.
func (m *Metrics) read(ctx context.Context) (gauges, error) {
	counts, err := store.RunCounts(ctx, m.st, "")
	if err != nil {
		return gauges{}, err
	}
	g := gauges{byStatus: counts}
	var parked []store.Entry
	if gr, ok := m.st.(store.GaugeReader); ok {
		if g.due, err = gr.RunsDue(ctx); err != nil {
			return gauges{}, err
		}
		if parked, err = gr.Parked(ctx, MaxMetricsScan); err != nil {
			return gauges{}, err
		}
		g.scanned = len(parked)
	} else if parked, err = m.scan(ctx, &g); err != nil {
		return gauges{}, err
	}
	for _, e := range parked {
		if e.Kind != hitchtype.KindRunWaiting {
			continue
		}
		var w hitchtype.RunWaiting
		if json.Unmarshal(e.Data, &w) != nil {
			continue
		}
		switch w.Reason {
		case hitchtype.WaitApproval:
			g.approvals += len(w.Calls)
		case hitchtype.WaitUncertain:
			g.uncertain += len(w.Calls)
		}
	}
	return g, nil
}

// scan counts due runs among the newest running and waiting runs and
// returns the last entry of each waiting one.
func (m *Metrics) scan(ctx context.Context, g *gauges) ([]store.Entry, error) {
	now, err := m.st.Now(ctx)
	if err != nil {
		return nil, err
	}
	runs, err := m.st.RunList(ctx, store.RunListParams{
		Statuses: []hitchtype.Status{hitchtype.StatusRunning, hitchtype.StatusWaiting}, Limit: MaxMetricsScan})
	if err != nil {
		return nil, err
	}
	g.due, g.scanned = g.byStatus[hitchtype.StatusQueued], len(runs)
	var parked []store.Entry
	for _, r := range runs {
		switch r.Status {
		case hitchtype.StatusRunning:
			if r.LeaseOwner == "" || !r.LeaseExpires.After(now) {
				g.due++
			}
		case hitchtype.StatusWaiting:
			if !r.WakeAt.IsZero() && !r.WakeAt.After(now) {
				g.due++
			}
			if r.Position < 1 {
				continue
			}
			last, err := m.st.JournalRead(ctx, store.JournalReadParams{RunID: r.ID, After: r.Position - 1, Limit: 1})
			if errors.Is(err, store.ErrNotFound) {
				continue // pruned meanwhile
			}
			if err != nil {
				return nil, err
			}
			parked = append(parked, last...)
		}
	}
	return parked, nil
}

// attrResult is the result of a store operation.
const attrResult = attribute.Key("hitch.result")

// MeterProvider is the provider t records its metrics with (the one
// FromEnv built, or Options.MeterProvider); nil when it records none.
func (t *Telemetry) MeterProvider() metric.MeterProvider { return t.opts.MeterProvider }
