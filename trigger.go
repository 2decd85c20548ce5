package hitch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hitch-dev/hitch/cron"
	"github.com/hitch-dev/hitch/store"
)

// TriggerConfig configures trigger bindings and their dispatcher
// (RunTriggers).
type TriggerConfig struct {
	// Poll is how often the dispatcher looks for due occurrences when it
	// knows of none sooner. Default 1s; 1ms to 1m.
	Poll time.Duration
	// Batch bounds the occurrences one pass claims. Default 32; 1 to 1000.
	Batch int
	// ClaimTTL is how long a claimed occurrence is held by the node that
	// claimed it; a node that dies holding one gives it up after this.
	// Default 30s; 10ms to 1h.
	ClaimTTL time.Duration
	// MaxPerSession bounds the bindings a session registers through its
	// tools (schedule_wake, schedule) that are not done. Default 16; 1 to
	// 1000.
	MaxPerSession int
	// MinInterval is the shortest gap between two occurrences of a
	// binding registered through a tool. Default 5m; 1s to 24h.
	MinInterval time.Duration
}

func (c TriggerConfig) withDefaults() TriggerConfig {
	c.Poll = cmp.Or(c.Poll, DefaultTriggerPoll)
	c.Batch = cmp.Or(c.Batch, DefaultTriggerBatch)
	c.ClaimTTL = cmp.Or(c.ClaimTTL, DefaultTriggerClaimTTL)
	c.MaxPerSession = cmp.Or(c.MaxPerSession, DefaultTriggersPerSession)
	c.MinInterval = cmp.Or(c.MinInterval, DefaultTriggerMinInterval)
	return c
}

func (c TriggerConfig) validate() error {
	var errs []error
	between := func(field string, v, lo, hi time.Duration) {
		if v < lo || v > hi {
			errs = append(errs, fmt.Errorf("out of range: Config.Triggers.%s is %s, want %s to %s", field, v, lo, hi))
		}
	}
	between("Poll", c.Poll, time.Millisecond, time.Minute)
	between("ClaimTTL", c.ClaimTTL, 10*time.Millisecond, time.Hour)
	between("MinInterval", c.MinInterval, time.Second, 24*time.Hour)
	if c.Batch < 1 || c.Batch > store.MaxTriggerPage {
		errs = append(errs, fmt.Errorf("out of range: Config.Triggers.Batch is %d, want 1 to %d", c.Batch, store.MaxTriggerPage))
	}
	if c.MaxPerSession < 1 || c.MaxPerSession > 1000 {
		errs = append(errs, fmt.Errorf("out of range: Config.Triggers.MaxPerSession is %d, want 1 to 1000", c.MaxPerSession))
	}
	return errors.Join(errs...)
}

// Missed-occurrence policies of a binding: what happens to occurrences
// that came while no dispatcher ran (more than the binding's grace ago).
const (
	// MissedOnce fires once for all the missed occurrences, then goes on
	// with the schedule (the default).
	MissedOnce = "once"
	// MissedSkip fires none of them and goes on with the schedule.
	MissedSkip = "skip"
)

// TriggerSpec defines a trigger binding: when it fires (a cron schedule,
// or once at a time), what each occurrence does (start a run of an agent,
// or send a message to a session), and when it ends.
type TriggerSpec struct {
	// ID names the binding: 1 to MaxTriggerIDBytes of letters, digits and
	// . _ : -. Required.
	ID string `json:"id"`
	// Cron is a five-field schedule or a macro (@hourly, @daily …), in
	// Zone. Exactly one of Cron and At is set.
	Cron string `json:"cron,omitempty"`
	// Zone is an IANA time zone for Cron, such as Europe/Berlin. Default
	// UTC.
	Zone string `json:"zone,omitempty"`
	// At fires the binding once, at this time (truncated to the second,
	// rounded up).
	At time.Time `json:"at,omitzero"`
	// Agent and Input: each occurrence starts a run of the agent (the
	// highest version registered, unless Version is set) on Input.
	Agent   string `json:"agent,omitempty"`
	Version int    `json:"version,omitempty"`
	Input   string `json:"input,omitempty"`
	// Session and Text: each occurrence sends Text to the session.
	// Exactly one of Agent and Session is set.
	Session string `json:"session,omitempty"`
	Text    string `json:"text,omitempty"`
	// MaxFires ends the binding after this many fires; 0 means no bound.
	MaxFires int64 `json:"max_fires,omitempty"`
	// ExpiresAt ends the binding: no occurrence after it fires.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// Missed is MissedOnce (default) or MissedSkip.
	Missed string `json:"missed,omitempty"`
	// Grace is how late an occurrence may be dispatched and still count
	// as on time; a later one is missed. Default 1m; 1s to 24h.
	Grace time.Duration `json:"grace,omitempty"`
	// Tenant owns the binding. Default "default".
	Tenant string `json:"tenant,omitempty"`
}

// MarshalJSON writes the grace as a duration string ("1m0s").
func (s TriggerSpec) MarshalJSON() ([]byte, error) {
	type plain TriggerSpec
	return json.Marshal(struct {
		plain
		Grace string `json:"grace,omitempty"`
	}{plain(s), durationText(s.Grace)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *TriggerSpec) UnmarshalJSON(b []byte) error {
	type plain TriggerSpec
	var v struct {
		plain
		Grace string `json:"grace,omitempty"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = TriggerSpec(v.plain)
	if v.Grace != "" {
		d, err := time.ParseDuration(v.Grace)
		if err != nil {
			return fmt.Errorf("grace: %w", err)
		}
		s.Grace = d
	}
	return nil
}

func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// MaxTriggerIDBytes bounds a binding's id, so the run ids derived from it
// stay within MaxRunIDBytes.
const MaxTriggerIDBytes = 64

// ErrTriggerNotFound: no binding has that id.
var ErrTriggerNotFound = store.ErrTriggerNotFound

// ErrNoTriggers: the store does not implement store.TriggerStore.
var ErrNoTriggers = errors.New("the store does not keep trigger bindings")

// withDefaults fills the spec's defaults.
func (s TriggerSpec) withDefaults() TriggerSpec {
	s.Missed = cmp.Or(s.Missed, MissedOnce)
	s.Grace = cmp.Or(s.Grace, DefaultTriggerGrace)
	if s.Zone == "" && s.Cron != "" {
		s.Zone = "UTC"
	}
	if !s.At.IsZero() {
		s.At = ceilSecond(s.At)
	}
	s.ExpiresAt = s.ExpiresAt.UTC()
	return s
}

func ceilSecond(t time.Time) time.Time {
	c := t.UTC().Truncate(time.Second)
	if c.Before(t) {
		c = c.Add(time.Second)
	}
	return c
}

// schedule parses the spec's schedule, or returns nil for a one-shot.
func (s TriggerSpec) schedule() (*cron.Schedule, error) {
	if s.Cron == "" {
		return nil, nil
	}
	loc, err := time.LoadLocation(cmp.Or(s.Zone, "UTC"))
	if err != nil {
		return nil, fmt.Errorf("zone %q: not an IANA time zone", s.Zone)
	}
	sc, err := cron.Parse(s.Cron, loc)
	if err != nil {
		return nil, err
	}
	return &sc, nil
}

// Validate reports every problem of a spec (defaults applied) as
// ConfigErrors, each naming its field by its JSON (and config) name: id,
// cron, zone, at, agent, version, input, session, text, max_fires,
// expires_at, missed, grace, tenant.
func (s TriggerSpec) Validate() error {
	s = s.withDefaults()
	var errs ConfigErrors
	add := func(field, format string, a ...any) {
		errs = append(errs, ConfigError{Field: field, Problem: fmt.Sprintf(format, a...)})
	}
	if err := CheckRunID(s.ID); err != nil || len(s.ID) > MaxTriggerIDBytes {
		add("id", "%.40q: want 1 to %d letters, digits and . _ : -", s.ID, MaxTriggerIDBytes)
	}
	switch {
	case s.Cron == "" && s.At.IsZero():
		add("cron", "set a cron schedule or a one-shot time (at)")
	case s.Cron != "" && !s.At.IsZero():
		add("at", "set cron or at, not both")
	case s.Cron != "":
		if _, err := s.schedule(); err != nil {
			field := "cron"
			if strings.HasPrefix(err.Error(), "zone") {
				field = "zone"
			}
			add(field, "%v", err)
		}
	case s.Zone != "" && s.Zone != "UTC":
		add("zone", "only a cron schedule takes a zone")
	}
	switch {
	case s.Agent == "" && s.Session == "":
		add("agent", "set a target: agent (start a run) or session (send a message)")
	case s.Agent != "" && s.Session != "":
		add("session", "set agent or session, not both")
	case s.Agent != "" && s.Text != "":
		add("text", "a run target takes input, not text")
	case s.Session != "" && (s.Input != "" || s.Version != 0):
		add("input", "a session target takes text, not input or version")
	case s.Session != "" && s.Text == "":
		add("text", "a session target needs the message's text")
	case s.Session != "":
		if err := checkSessionID(s.Session); err != nil {
			add("session", "%v", err)
		}
	}
	if s.Version < 0 {
		add("version", "%d: want 0 (the highest registered) or more", s.Version)
	}
	if s.MaxFires < 0 {
		add("max_fires", "%d: want 0 (no bound) or more", s.MaxFires)
	}
	if s.Missed != MissedOnce && s.Missed != MissedSkip {
		add("missed", "%q: want once or skip", s.Missed)
	}
	if s.Grace < time.Second || s.Grace > 24*time.Hour {
		add("grace", "%s: want 1s to 24h", s.Grace)
	}
	if len(s.Input) > MaxTriggerTextBytes {
		add("input", "%d bytes: at most %d", len(s.Input), MaxTriggerTextBytes)
	}
	if len(s.Text) > MaxTriggerTextBytes {
		add("text", "%d bytes: at most %d", len(s.Text), MaxTriggerTextBytes)
	}
	if err := store.CheckName("tenant", s.Tenant, false); err != nil {
		add("tenant", "%v", err)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// MaxTriggerTextBytes bounds a binding's input or text.
const MaxTriggerTextBytes = 32 << 10

// first returns the binding's first occurrence at or after now.
func (s TriggerSpec) first(now time.Time) (time.Time, error) {
	if !s.At.IsZero() {
		return s.At, nil
	}
	sc, err := s.schedule()
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

// Trigger is a binding as the store holds it.
type Trigger struct {
	Spec      TriggerSpec
	SessionID string // the session that registered it, or ""
	State     string // active, paused, done
	FireCount int64
	// MissedCount counts occurrences skipped (MissedSkip) or folded into
	// one fire (MissedOnce).
	MissedCount int64
	LastFire    time.Time
	NextFire    time.Time
	Failures    int
	LastError   string
	ClaimOwner  string
	ClaimUntil  time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func triggerOf(t store.Trigger) (Trigger, error) {
	out := Trigger{SessionID: t.SessionID, State: t.State, FireCount: t.FireCount, MissedCount: t.MissedCount,
		LastFire: t.LastFire, NextFire: t.NextFire, Failures: t.Failures, LastError: t.LastError,
		ClaimOwner: t.ClaimOwner, ClaimUntil: t.ClaimUntil, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	if err := json.Unmarshal(t.Spec, &out.Spec); err != nil {
		return Trigger{}, fmt.Errorf("decode trigger %s: %w", t.ID, err)
	}
	out.Spec.ID, out.Spec.Tenant = t.ID, t.Tenant
	return out, nil
}

func (rt *Runtime) triggerStore(op string) (store.TriggerStore, error) {
	ts, ok := rt.cfg.Store.(store.TriggerStore)
	if !ok {
		return nil, fmt.Errorf("%s: %w", op, ErrNoTriggers)
	}
	return ts, nil
}

// TriggerOptions adjust CreateTrigger.
type TriggerOptions struct {
	// Replace replaces a binding of the same id whose definition differs
	// (config reloads use it); its counts are kept. Without it, creating
	// an existing id returns the existing binding unchanged.
	Replace bool
	// Paused creates the binding paused.
	Paused bool
	// sessionID and maxPerSession bound a session's own bindings (tools).
	sessionID     string
	maxPerSession int
}

// CreateTrigger stores a binding. Its first occurrence is the first at or
// after the store clock's now (a one-shot's At, however early: a time
// already past is missed, and fires at once by MissedOnce). It is
// idempotent by id: created is false when it existed.
func (rt *Runtime) CreateTrigger(ctx context.Context, spec TriggerSpec, o TriggerOptions) (t Trigger, created bool, err error) {
	ts, err := rt.triggerStore("create trigger")
	if err != nil {
		return Trigger{}, false, err
	}
	if err := spec.Validate(); err != nil {
		return Trigger{}, false, fmt.Errorf("create trigger %.40q: %w", spec.ID, err)
	}
	spec = spec.withDefaults()
	if spec.Agent != "" {
		if _, err := rt.agentNamed(spec.Agent, spec.Version); err != nil {
			return Trigger{}, false, fmt.Errorf("create trigger %q: %w", spec.ID, err)
		}
	}
	now, err := rt.cfg.Store.Now(ctx)
	if err != nil {
		return Trigger{}, false, fmt.Errorf("create trigger %q: read store clock: %w", spec.ID, err)
	}
	first, err := spec.first(now)
	if err != nil {
		return Trigger{}, false, fmt.Errorf("create trigger: %w", err)
	}
	body := spec
	body.ID, body.Tenant = "", ""
	data, err := json.Marshal(body)
	if err != nil {
		return Trigger{}, false, fmt.Errorf("create trigger %q: %w", spec.ID, err)
	}
	data = rt.eng.Redact(data)
	row, created, err := ts.TriggerCreate(ctx, store.TriggerCreateParams{ID: spec.ID, Tenant: spec.Tenant, SessionID: o.sessionID,
		Spec: data, NextFire: first, Paused: o.Paused, Replace: o.Replace, MaxPerSession: o.maxPerSession})
	if err != nil {
		return Trigger{}, false, fmt.Errorf("create trigger: %w", err)
	}
	rt.trig.poke()
	t, err = triggerOf(row)
	return t, created, err
}

// GetTrigger returns one binding.
func (rt *Runtime) GetTrigger(ctx context.Context, id string) (Trigger, error) {
	ts, err := rt.triggerStore("get trigger")
	if err != nil {
		return Trigger{}, err
	}
	row, err := ts.TriggerGet(ctx, id)
	if err != nil {
		return Trigger{}, fmt.Errorf("get trigger: %w", err)
	}
	return triggerOf(row)
}

// TriggerListOptions filter and page ListTriggers.
type TriggerListOptions struct {
	After     string // the last id of the previous page
	Limit     int    // 0 means 100; at most 1000
	SessionID string
	State     string
	Tenant    string
}

// ListTriggers returns bindings in order of their ids.
func (rt *Runtime) ListTriggers(ctx context.Context, o TriggerListOptions) ([]Trigger, error) {
	ts, err := rt.triggerStore("list triggers")
	if err != nil {
		return nil, err
	}
	rows, err := ts.TriggerList(ctx, store.TriggerListParams{After: o.After, Limit: o.Limit, SessionID: o.SessionID,
		State: o.State, Tenant: o.Tenant})
	if err != nil {
		return nil, fmt.Errorf("list triggers: %w", err)
	}
	out := make([]Trigger, 0, len(rows))
	for _, r := range rows {
		t, err := triggerOf(r)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// PauseTrigger stops a binding from firing until ResumeTrigger; the
// occurrences that come meanwhile are judged by its missed policy on
// resume. Both are idempotent; a done binding stays done.
func (rt *Runtime) PauseTrigger(ctx context.Context, id string) (Trigger, error) {
	return rt.setTrigger(ctx, "pause trigger", id, store.TriggerStore.TriggerPause)
}

// ResumeTrigger resumes a paused binding.
func (rt *Runtime) ResumeTrigger(ctx context.Context, id string) (Trigger, error) {
	return rt.setTrigger(ctx, "resume trigger", id, store.TriggerStore.TriggerResume)
}

func (rt *Runtime) setTrigger(ctx context.Context, op, id string, f func(store.TriggerStore, context.Context, string) (store.Trigger, error)) (Trigger, error) {
	ts, err := rt.triggerStore(op)
	if err != nil {
		return Trigger{}, err
	}
	row, err := f(ts, ctx, id)
	if err != nil {
		return Trigger{}, fmt.Errorf("%s: %w", op, err)
	}
	rt.trig.poke()
	return triggerOf(row)
}

// RemoveTrigger deletes a binding; removed is false when there was none.
// An occurrence being dispatched as it is removed may still fire.
func (rt *Runtime) RemoveTrigger(ctx context.Context, id string) (removed bool, err error) {
	ts, err := rt.triggerStore("remove trigger")
	if err != nil {
		return false, err
	}
	if removed, err = ts.TriggerRemove(ctx, id); err != nil {
		return false, fmt.Errorf("remove trigger: %w", err)
	}
	return removed, nil
}

// agentNamed returns the registered agent of that name and version, or
// its highest version for version 0.
func (rt *Runtime) agentNamed(name string, version int) (*Agent, error) {
	if version > 0 {
		if a, ok := rt.agents[agentKey(name, version)]; ok {
			return a, nil
		}
		return nil, fmt.Errorf("%w: %s version %d", ErrUnknownAgent, name, version)
	}
	var best *Agent
	for _, a := range rt.agents {
		if a.Name() == name && (best == nil || a.Version() > best.Version()) {
			best = a
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownAgent, name)
	}
	return best, nil
}

// OccurrenceID is the id an occurrence's dispatch carries: the run id of
// a run target, the idempotency key of a session target. The same binding
// and occurrence always give the same id, so a dispatch repeated after a
// crash starts or sends nothing new.
func OccurrenceID(bindingID string, occurrence time.Time) string {
	return "trg:" + bindingID + ":" + occurrence.UTC().Format("20060102T150405Z")
}
