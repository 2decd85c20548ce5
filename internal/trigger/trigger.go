// Package trigger keeps trigger bindings and dispatches their occurrences:
// a Service creates, lists, pauses and removes bindings, and once started
// is the node's dispatcher, a background service that claims the
// occurrences due by the store clock and starts a run or sends a session
// a message for each. Its Scheduler is what the schedule tools of a
// session's run (schedule_wake, schedule) register bindings through.
package trigger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/hook"
	"github.com/hitch-dev/hitch/internal/startstop"
	"github.com/hitch-dev/hitch/store"
)

// ErrNoTriggers: the store does not implement store.TriggerStore.
var ErrNoTriggers = errors.New("the store does not keep trigger bindings")

// Store is what triggers need of a store: its bindings, its clock, and the
// first entry of a run (to find a tool call's session).
type Store interface {
	store.TriggerStore
	Now(ctx context.Context) (time.Time, error)
	RunGet(ctx context.Context, id string) (store.Run, error)
	JournalRead(ctx context.Context, p store.JournalReadParams) ([]store.Entry, error)
}

// Config configures a Service; the runtime fills it from its own Config.
type Config struct {
	// Store keeps the bindings; nil when the runtime's store keeps none,
	// and then every method answers ErrNoTriggers.
	Store Store
	// Node owns this node's claims.
	Node string
	// Triggers are the dispatcher's bounds, defaults filled in.
	Triggers hitchtype.TriggerConfig
	// Agent checks that a run target names a registered agent (version 0:
	// any version).
	Agent func(name string, version int) error
	// StartRun starts, detached, the run of a run target's occurrence,
	// with id as its run id; Send sends a session target's text with key
	// as its idempotency key. Both must be idempotent by id and key.
	StartRun func(ctx context.Context, spec hitchtype.TriggerSpec, id string) error
	Send     func(ctx context.Context, sessionID, text, key string) (messageID string, err error)
	// Hooks returns what watches a dispatch of spec: the target agent's
	// hooks, or the target session's agent's.
	Hooks func(ctx context.Context, spec hitchtype.TriggerSpec) (Watch, error)
	// Redact is the runtime's one redaction point: a binding's definition
	// passes it before it is stored.
	Redact func([]byte) []byte
	// OnError, if set, sees a failed pass of the dispatcher, which goes
	// on after a backoff: doubling from Triggers.Poll up to MaxBackoff.
	OnError    func(error)
	MaxBackoff time.Duration
}

// Watch is what watches a binding's dispatch: its agent's name, and the
// agent's hooks when they watch triggers (nil otherwise), each call
// bounded by Timeout (0: hitchtype.DefaultHookTimeout).
type Watch struct {
	Agent   string
	Hooks   hook.TriggerHooks
	Timeout time.Duration
}

// Pass is one pass of the dispatcher: the occurrences it claimed and its
// error.
type Pass struct {
	N   int
	Err error
}

// Service keeps bindings and, once started, dispatches their occurrences.
type Service struct {
	cfg  Config
	wake chan struct{} // capacity 1: a binding changed on this node
	startstop.Base
	// TestSignals let tests wait on passes instead of sleeping.
	TestSignals struct {
		Passed startstop.Signal[Pass]
	}
}

// New returns a stopped Service.
func New(cfg Config) *Service { return &Service{cfg: cfg, wake: make(chan struct{}, 1)} }

// Poke wakes the dispatcher without ever blocking.
func (s *Service) Poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Service) store(op string) (Store, error) {
	if s.cfg.Store == nil {
		return nil, fmt.Errorf("%s: %w", op, ErrNoTriggers)
	}
	return s.cfg.Store, nil
}

// Create stores a binding; see triggers.Client.Create.
func (s *Service) Create(ctx context.Context, spec hitchtype.TriggerSpec, o hitchtype.TriggerOptions) (hitchtype.Trigger, bool, error) {
	return s.create(ctx, spec, o, "", 0)
}

// create stores a binding; a session's own bindings (from its tools) name
// the session and are bounded by maxPerSession.
func (s *Service) create(ctx context.Context, spec hitchtype.TriggerSpec, o hitchtype.TriggerOptions, sessionID string, maxPerSession int) (t hitchtype.Trigger, created bool, err error) {
	ts, err := s.store("create trigger")
	if err != nil {
		return hitchtype.Trigger{}, false, err
	}
	if err := spec.Validate(); err != nil {
		return hitchtype.Trigger{}, false, fmt.Errorf("create trigger %.40q: %w", spec.ID, err)
	}
	spec = spec.WithDefaults()
	if spec.Agent != "" {
		if err := s.cfg.Agent(spec.Agent, spec.Version); err != nil {
			return hitchtype.Trigger{}, false, fmt.Errorf("create trigger %q: %w", spec.ID, err)
		}
	}
	now, err := ts.Now(ctx)
	if err != nil {
		return hitchtype.Trigger{}, false, fmt.Errorf("create trigger %q: read store clock: %w", spec.ID, err)
	}
	first, err := first(spec, now)
	if err != nil {
		return hitchtype.Trigger{}, false, fmt.Errorf("create trigger: %w", err)
	}
	body := spec
	body.ID, body.Tenant = "", ""
	data, err := json.Marshal(body)
	if err != nil {
		return hitchtype.Trigger{}, false, fmt.Errorf("create trigger %q: %w", spec.ID, err)
	}
	data = s.cfg.Redact(data)
	row, created, err := ts.TriggerCreate(ctx, store.TriggerCreateParams{ID: spec.ID, Tenant: spec.Tenant, SessionID: sessionID,
		Spec: data, NextFire: first, Paused: o.Paused, Replace: o.Replace, MaxPerSession: maxPerSession})
	if err != nil {
		return hitchtype.Trigger{}, false, fmt.Errorf("create trigger: %w", err)
	}
	s.Poke()
	t, err = triggerOf(row)
	return t, created, err
}

// first returns the binding's first occurrence at or after now.
func first(s hitchtype.TriggerSpec, now time.Time) (time.Time, error) {
	if !s.At.IsZero() {
		return s.At, nil
	}
	sc, err := s.Schedule()
	if err != nil {
		return time.Time{}, err
	}
	// Next is strictly after its argument; an occurrence exactly now is due.
	at := sc.Next(now.Add(-time.Nanosecond))
	if at.IsZero() {
		return time.Time{}, fmt.Errorf("trigger %q: cron %q has no occurrence", s.ID, s.Cron)
	}
	return at, nil
}

func triggerOf(t store.Trigger) (hitchtype.Trigger, error) {
	out := hitchtype.Trigger{SessionID: t.SessionID, State: t.State, FireCount: t.FireCount, MissedCount: t.MissedCount,
		LastFire: t.LastFire, NextFire: t.NextFire, Failures: t.Failures, LastError: t.LastError,
		SkipCount: t.SkipCount, LastSkip: t.LastSkip, SkipReason: t.SkipReason, ClaimOwner: t.ClaimOwner, ClaimUntil: t.ClaimUntil, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	if err := json.Unmarshal(t.Spec, &out.Spec); err != nil {
		return hitchtype.Trigger{}, fmt.Errorf("decode trigger %s: %w", t.ID, err)
	}
	out.Spec.ID, out.Spec.Tenant = t.ID, t.Tenant
	return out, nil
}

// Get returns one binding.
func (s *Service) Get(ctx context.Context, id string) (hitchtype.Trigger, error) {
	ts, err := s.store("get trigger")
	if err != nil {
		return hitchtype.Trigger{}, err
	}
	row, err := ts.TriggerGet(ctx, id)
	if err != nil {
		return hitchtype.Trigger{}, fmt.Errorf("get trigger: %w", err)
	}
	return triggerOf(row)
}

// List returns bindings in order of their ids.
func (s *Service) List(ctx context.Context, o hitchtype.TriggerListOptions) ([]hitchtype.Trigger, error) {
	ts, err := s.store("list triggers")
	if err != nil {
		return nil, err
	}
	rows, err := ts.TriggerList(ctx, store.TriggerListParams{After: o.After, Limit: o.Limit, SessionID: o.SessionID,
		State: o.State, Tenant: o.Tenant})
	if err != nil {
		return nil, fmt.Errorf("list triggers: %w", err)
	}
	out := make([]hitchtype.Trigger, 0, len(rows))
	for _, r := range rows {
		t, err := triggerOf(r)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// Pause stops a binding from firing until Resume.
func (s *Service) Pause(ctx context.Context, id string) (hitchtype.Trigger, error) {
	return s.set(ctx, "pause trigger", id, store.PauseTrigger)
}

// Resume resumes a paused binding.
func (s *Service) Resume(ctx context.Context, id string) (hitchtype.Trigger, error) {
	return s.set(ctx, "resume trigger", id, store.ResumeTrigger)
}

func (s *Service) set(ctx context.Context, op, id string, f func(context.Context, store.TriggerStore, string) (store.Trigger, error)) (hitchtype.Trigger, error) {
	ts, err := s.store(op)
	if err != nil {
		return hitchtype.Trigger{}, err
	}
	row, err := f(ctx, ts, id)
	if err != nil {
		return hitchtype.Trigger{}, fmt.Errorf("%s: %w", op, err)
	}
	s.Poke()
	return triggerOf(row)
}

// Remove deletes a binding; removed is false when there was none.
func (s *Service) Remove(ctx context.Context, id string) (removed bool, err error) {
	ts, err := s.store("remove trigger")
	if err != nil {
		return false, err
	}
	if removed, err = ts.TriggerRemove(ctx, id); err != nil {
		return false, fmt.Errorf("remove trigger: %w", err)
	}
	return removed, nil
}
