package builtin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hitch-dev/hitch/tool"
)

// Scheduler registers trigger bindings for the run a tool body works for:
// messages to that run's own session. hitch.Runtime puts one in the
// context of every tool body it runs (WithScheduler); the schedule tools
// find it there. Both methods are idempotent by (run, call): a body run
// again after a crash registers nothing new.
type Scheduler interface {
	// ScheduleWake sends text to the run's session once: at at, or when
	// the store clock has moved on by after (exactly one is set).
	ScheduleWake(ctx context.Context, call tool.CallInfo, at time.Time, after time.Duration, text string) (Scheduled, error)
	// Schedule sends text to the run's session at each occurrence of a
	// cron schedule in zone ("" is UTC), at most maxFires times (0: no
	// bound).
	Schedule(ctx context.Context, call tool.CallInfo, cron, zone, text string, maxFires int64) (Scheduled, error)
}

// Scheduled is a binding a schedule tool registered.
type Scheduled struct {
	ID       string    `json:"trigger"`
	NextFire time.Time `json:"next_fire"`
	Session  string    `json:"session"`
}

type schedulerKey struct{}

// WithScheduler returns ctx carrying s for the schedule tools.
func WithScheduler(ctx context.Context, s Scheduler) context.Context {
	return context.WithValue(ctx, schedulerKey{}, s)
}

// ErrNoScheduler: the schedule tools ran outside a runtime that keeps
// trigger bindings.
var ErrNoScheduler = errors.New("no scheduler: this runtime keeps no trigger bindings")

func schedulerFrom(ctx context.Context) (Scheduler, tool.CallInfo, error) {
	s, _ := ctx.Value(schedulerKey{}).(Scheduler)
	call, ok := tool.CallFrom(ctx)
	if s == nil || !ok {
		return nil, tool.CallInfo{}, ErrNoScheduler
	}
	return s, call, nil
}

// ScheduleToolNames are the names of the schedule tools.
var ScheduleToolNames = []string{"schedule_wake", "schedule"}

type wakeIn struct {
	At   string `json:"at,omitempty" jsonschema:"when to wake, as an RFC 3339 time such as 2027-05-01T09:00:00Z; or give in"`
	In   string `json:"in,omitempty" jsonschema:"how long from now, such as 10m or 2h30m; or give at"`
	Text string `json:"text,omitempty" jsonschema:"the message you will receive then, to remind you why (default: a plain wake-up note)"`
}

const wakeDescription = `Wake me later: at the given time (at) or after a delay (in), a message arrives in this conversation and you are asked to go on from there. Use it to check back on something that takes time. The message is sent once; the answer names the binding and when it fires.`

type scheduleIn struct {
	Cron     string `json:"cron" jsonschema:"a five-field cron schedule (minute hour day-of-month month day-of-week) or a macro such as @daily"`
	Zone     string `json:"zone,omitempty" jsonschema:"the IANA time zone the schedule is read in, such as Europe/Berlin (default UTC)"`
	Text     string `json:"text" jsonschema:"the message this conversation receives at each occurrence"`
	MaxFires int64  `json:"max_fires,omitempty" jsonschema:"stop after this many messages (default: no bound)"`
}

const scheduleDescription = `Send this conversation a message on a recurring schedule (cron), such as every weekday at 09:00 in a time zone. Each occurrence sends the text once. The answer names the binding and its first occurrence.`

// ScheduleWake returns the schedule_wake tool. Running it again for the
// same call registers nothing new, so it is replayable.
func ScheduleWake() (tool.Tool, error) {
	return tool.New("schedule_wake", wakeDescription, func(ctx context.Context, in wakeIn) (Scheduled, error) {
		s, call, err := schedulerFrom(ctx)
		if err != nil {
			return Scheduled{}, fmt.Errorf("schedule_wake: %w", err)
		}
		var (
			at    time.Time
			after time.Duration
		)
		switch {
		case (in.At == "") == (in.In == ""):
			return Scheduled{}, argError("schedule_wake", "give exactly one of at and in")
		case in.At != "":
			if at, err = time.Parse(time.RFC3339, in.At); err != nil {
				return Scheduled{}, argError("schedule_wake", "at %q: want an RFC 3339 time such as 2027-05-01T09:00:00Z", in.At)
			}
		default:
			if after, err = time.ParseDuration(in.In); err != nil || after <= 0 {
				return Scheduled{}, argError("schedule_wake", "in %q: want a positive duration such as 10m", in.In)
			}
		}
		return s.ScheduleWake(ctx, call, at, after, in.Text)
	}, tool.WithReplay(3))
}

// Schedule returns the schedule tool. Running it again for the same call
// registers nothing new, so it is replayable.
func Schedule() (tool.Tool, error) {
	return tool.New("schedule", scheduleDescription, func(ctx context.Context, in scheduleIn) (Scheduled, error) {
		s, call, err := schedulerFrom(ctx)
		if err != nil {
			return Scheduled{}, fmt.Errorf("schedule: %w", err)
		}
		switch {
		case in.Cron == "":
			return Scheduled{}, argError("schedule", "cron is empty")
		case in.Text == "":
			return Scheduled{}, argError("schedule", "text is empty")
		case in.MaxFires < 0:
			return Scheduled{}, argError("schedule", "max_fires %d: want 0 (no bound) or more", in.MaxFires)
		}
		return s.Schedule(ctx, call, in.Cron, in.Zone, in.Text, in.MaxFires)
	}, tool.WithReplay(3))
}

// ScheduleTools returns the named schedule tools (both when none are
// named).
func ScheduleTools(names ...string) ([]tool.Tool, error) {
	if len(names) == 0 {
		names = ScheduleToolNames
	}
	var out []tool.Tool
	for _, n := range names {
		var (
			t   tool.Tool
			err error
		)
		switch n {
		case "schedule_wake":
			t, err = ScheduleWake()
		case "schedule":
			t, err = Schedule()
		default:
			return nil, fmt.Errorf("schedule tools: unknown tool %q (known: schedule_wake, schedule)", n)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
