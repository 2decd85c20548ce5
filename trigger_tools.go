package hitch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/tool"
	"github.com/hitch-dev/hitch/tool/builtin"
)

// MaxWakeAhead bounds how far ahead schedule_wake may set a wake.
const MaxWakeAhead = 366 * 24 * time.Hour

// minIntervalProbe is how many occurrences of a tool's cron schedule are
// checked against Config.Triggers.MinInterval.
const minIntervalProbe = 512

// scheduler is the runtime's builtin.Scheduler: the schedule tools of a
// session's run register bindings that send that session messages, bounded
// by Config.Triggers.MaxPerSession and MinInterval.
type scheduler struct{ rt *Runtime }

var _ builtin.Scheduler = scheduler{}

// ErrNotInSession: a schedule tool ran in a run that is no session's
// submission (nor below one), so there is no conversation to wake.
var ErrNotInSession = errors.New("the run is not part of a session")

// sessionOf returns the session whose submission is the run's family root.
func (s scheduler) sessionOf(ctx context.Context, runID string) (string, error) {
	r, err := s.rt.cfg.Store.RunGet(ctx, runID)
	if err != nil {
		return "", err
	}
	es, err := s.rt.cfg.Store.JournalRead(ctx, store.JournalReadParams{RunID: r.RootID, Limit: 1})
	if err != nil {
		return "", err
	}
	var started hitchtype.RunStarted
	if len(es) == 0 || es[0].Kind != hitchtype.KindRunStarted || json.Unmarshal(es[0].Data, &started) != nil {
		return "", fmt.Errorf("run %s: its first entry is not %s", r.RootID, hitchtype.KindRunStarted)
	}
	if started.Session == "" {
		return "", fmt.Errorf("%w: run %s", ErrNotInSession, runID)
	}
	return started.Session, nil
}

// toolBindingID names the binding a call registers, the same every time
// the call's body runs.
func toolBindingID(prefix string, call tool.CallInfo) string {
	h := sha256.Sum256([]byte(call.RunID + "\x00" + call.Call))
	return prefix + hex.EncodeToString(h[:10])
}

func (s scheduler) create(ctx context.Context, spec TriggerSpec) (builtin.Scheduled, error) {
	t, _, err := s.rt.CreateTrigger(ctx, spec, TriggerOptions{sessionID: spec.Session, maxPerSession: s.rt.trig.cfg.MaxPerSession})
	if err != nil {
		return builtin.Scheduled{}, err
	}
	return builtin.Scheduled{ID: t.Spec.ID, NextFire: t.NextFire, Session: spec.Session}, nil
}

// ScheduleWake registers a one-shot message to the run's session.
func (s scheduler) ScheduleWake(ctx context.Context, call tool.CallInfo, at time.Time, after time.Duration, text string) (builtin.Scheduled, error) {
	sid, err := s.sessionOf(ctx, call.RunID)
	if err != nil {
		return builtin.Scheduled{}, fmt.Errorf("schedule_wake: %w", err)
	}
	now, err := s.rt.cfg.Store.Now(ctx)
	if err != nil {
		return builtin.Scheduled{}, fmt.Errorf("schedule_wake: read store clock: %w", err)
	}
	if after > 0 {
		at = now.Add(after)
	}
	switch {
	case at.Before(now):
		return builtin.Scheduled{}, &tool.ArgumentError{Tool: "schedule_wake", Reason: fmt.Sprintf("at %s is in the past (now is %s)",
			at.UTC().Format(time.RFC3339), now.Format(time.RFC3339))}
	case at.Sub(now) > MaxWakeAhead:
		return builtin.Scheduled{}, &tool.ArgumentError{Tool: "schedule_wake", Reason: fmt.Sprintf("at %s is more than %s ahead",
			at.UTC().Format(time.RFC3339), MaxWakeAhead)}
	}
	id := toolBindingID("wake-", call)
	if text == "" {
		text = fmt.Sprintf("This is the wake-up you scheduled (%s) for %s.", id, ceilSecond(at).Format(time.RFC3339))
	}
	out, err := s.create(ctx, TriggerSpec{ID: id, At: at, Session: sid, Text: text})
	if err != nil {
		return out, fmt.Errorf("schedule_wake: %w", err)
	}
	return out, nil
}

// Schedule registers a recurring message to the run's session.
func (s scheduler) Schedule(ctx context.Context, call tool.CallInfo, cronExpr, zone, text string, maxFires int64) (builtin.Scheduled, error) {
	sid, err := s.sessionOf(ctx, call.RunID)
	if err != nil {
		return builtin.Scheduled{}, fmt.Errorf("schedule: %w", err)
	}
	spec := TriggerSpec{ID: toolBindingID("sched-", call), Cron: cronExpr, Zone: zone, Session: sid, Text: text, MaxFires: maxFires}
	if err := spec.Validate(); err != nil {
		return builtin.Scheduled{}, &tool.ArgumentError{Tool: "schedule", Reason: err.Error()}
	}
	sc, _ := spec.withDefaults().schedule()
	now, err := s.rt.cfg.Store.Now(ctx)
	if err != nil {
		return builtin.Scheduled{}, fmt.Errorf("schedule: read store clock: %w", err)
	}
	// Bound how often a model may have itself woken.
	prev := sc.Next(now)
	for range minIntervalProbe {
		next := sc.Next(prev)
		if next.IsZero() {
			break
		}
		if gap := next.Sub(prev); gap < s.rt.trig.cfg.MinInterval {
			return builtin.Scheduled{}, &tool.ArgumentError{Tool: "schedule", Reason: fmt.Sprintf(
				"cron %q fires %s apart (at %s and %s): occurrences must be at least %s apart",
				cronExpr, gap, prev.Format(time.RFC3339), next.Format(time.RFC3339), s.rt.trig.cfg.MinInterval)}
		}
		prev = next
	}
	out, err := s.create(ctx, spec)
	if err != nil {
		return out, fmt.Errorf("schedule: %w", err)
	}
	return out, nil
}
