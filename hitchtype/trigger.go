package hitchtype

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hitch-dev/hitch/cron"
)

// Defaults of trigger bindings and their dispatcher (TriggerConfig,
// TriggerSpec).
const (
	DefaultTriggerPoll        = time.Second
	DefaultTriggerBatch       = 32
	DefaultTriggerClaimTTL    = 30 * time.Second
	DefaultTriggersPerSession = 16
	DefaultTriggerMinInterval = 5 * time.Minute
	// DefaultTriggerGrace is how late an occurrence may be dispatched
	// and still be on time; a later one is missed.
	DefaultTriggerGrace = time.Minute
	// DefaultTriggerMaxRetry bounds the wait before a failed dispatch is
	// tried again (doubling from the poll interval).
	DefaultTriggerMaxRetry = 10 * time.Minute
)

// MaxTriggerPage bounds one page of bindings, and the occurrences one
// dispatch pass claims.
const MaxTriggerPage = 1000

// MaxWakeAhead bounds how far ahead schedule_wake may set a wake.
const MaxWakeAhead = 366 * 24 * time.Hour

// TriggerConfig configures trigger bindings and their dispatcher
// (hitch.Runtime.RunTriggers).
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

// WithDefaults returns the config with every unset field set to its
// default.
func (c TriggerConfig) WithDefaults() TriggerConfig {
	c.Poll = cmp.Or(c.Poll, DefaultTriggerPoll)
	c.Batch = cmp.Or(c.Batch, DefaultTriggerBatch)
	c.ClaimTTL = cmp.Or(c.ClaimTTL, DefaultTriggerClaimTTL)
	c.MaxPerSession = cmp.Or(c.MaxPerSession, DefaultTriggersPerSession)
	c.MinInterval = cmp.Or(c.MinInterval, DefaultTriggerMinInterval)
	return c
}

// Validate reports every field out of its range, naming it as a field of
// hitch.Config.
func (c TriggerConfig) Validate() error {
	var errs []error
	between := func(field string, v, lo, hi time.Duration) {
		if v < lo || v > hi {
			errs = append(errs, fmt.Errorf("out of range: Config.Triggers.%s is %s, want %s to %s", field, v, lo, hi))
		}
	}
	between("Poll", c.Poll, time.Millisecond, time.Minute)
	between("ClaimTTL", c.ClaimTTL, 10*time.Millisecond, time.Hour)
	between("MinInterval", c.MinInterval, time.Second, 24*time.Hour)
	if c.Batch < 1 || c.Batch > MaxTriggerPage {
		errs = append(errs, fmt.Errorf("out of range: Config.Triggers.Batch is %d, want 1 to %d", c.Batch, MaxTriggerPage))
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

// WithDefaults returns the spec with its defaults filled in and its times
// made UTC.
func (s TriggerSpec) WithDefaults() TriggerSpec {
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

// Schedule parses the spec's cron schedule, or returns nil for a one-shot.
func (s TriggerSpec) Schedule() (*cron.Schedule, error) {
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
	s = s.WithDefaults()
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
		if _, err := s.Schedule(); err != nil {
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
		if err := CheckSessionID(s.Session); err != nil {
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
	if len(s.Tenant) > MaxNameBytes {
		add("tenant", "tenant is %d bytes long, more than %d", len(s.Tenant), MaxNameBytes)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// MaxTriggerTextBytes bounds a binding's input or text.
const MaxTriggerTextBytes = 32 << 10

// MaxNameBytes bounds what a store keeps as a name: ids, agent names,
// owners, entry kinds, tenants of bindings.
const MaxNameBytes = 256

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
	// SkipCount counts occurrences a pre_trigger hook denied; LastSkip
	// is the latest, SkipReason why it was denied.
	SkipCount  int64
	LastSkip   time.Time
	SkipReason string
	Failures   int
	LastError  string
	ClaimOwner string
	ClaimUntil time.Time
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// TriggerOptions adjust triggers.Client.Create.
type TriggerOptions struct {
	// Replace replaces a binding of the same id whose definition differs
	// (config reloads use it); its counts are kept. Without it, creating
	// an existing id returns the existing binding unchanged.
	Replace bool
	// Paused creates the binding paused.
	Paused bool
}

// TriggerListOptions filter and page triggers.Client.List.
type TriggerListOptions struct {
	After     string // the last id of the previous page
	Limit     int    // 0 means 100; at most 1000
	SessionID string
	State     string
	Tenant    string
}

// OccurrenceID is the id an occurrence's dispatch carries: the run id of
// a run target, the idempotency key of a session target. The same binding
// and occurrence always give the same id, so a dispatch repeated after a
// crash starts or sends nothing new.
func OccurrenceID(bindingID string, occurrence time.Time) string {
	return "trg:" + bindingID + ":" + occurrence.UTC().Format("20060102T150405Z")
}
