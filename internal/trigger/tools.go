package trigger

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

// minIntervalProbe is how many occurrences of a tool's cron schedule are
// checked against Config.Triggers.MinInterval.
const minIntervalProbe = 512

// ErrNotInSession: a schedule tool ran in a run that is no session's
// submission (nor below one), so there is no conversation to wake.
var ErrNotInSession = errors.New("the run is not part of a session")

// Scheduler is the builtin.Scheduler of a node: the schedule tools of a
// session's run register bindings that send that session messages, bounded
// by Config.Triggers.MaxPerSession and MinInterval.
type Scheduler struct{ s *Service }

var _ builtin.Scheduler = Scheduler{}

// Scheduler returns the service's scheduler for the schedule tools.
func (s *Service) Scheduler() Scheduler { return Scheduler{s} }

// sessionOf returns the session whose submission is the run's family root.
func (sc Scheduler) sessionOf(ctx context.Context, runID string) (string, error) {
	st, err := sc.s.store("find the run's session")
	if err != nil {
		return "", err
	}
	r, err := st.RunGet(ctx, runID)
	if err != nil {
		return "", err
	}
	es, err := st.JournalRead(ctx, store.JournalReadParams{RunID: r.RootID, Limit: 1})
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

func (sc Scheduler) create(ctx context.Context, spec hitchtype.TriggerSpec) (builtin.Scheduled, error) {
	t, _, err := sc.s.create(ctx, spec, hitchtype.TriggerOptions{}, spec.Session, sc.s.cfg.Triggers.MaxPerSession)
	if err != nil {
		return builtin.Scheduled{}, err
	}
	return builtin.Scheduled{ID: t.Spec.ID, NextFire: t.NextFire, Session: spec.Session}, nil
}

// ScheduleWake registers a one-shot message to the run's session.
func (sc Scheduler) ScheduleWake(ctx context.Context, call tool.CallInfo, at time.Time, after time.Duration, text string) (builtin.Scheduled, error) {
	sid, err := sc.sessionOf(ctx, call.RunID)
	if err != nil {
		return builtin.Scheduled{}, fmt.Errorf("schedule_wake: %w", err)
	}
	now, err := sc.s.cfg.Store.Now(ctx)
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
	case at.Sub(now) > hitchtype.MaxWakeAhead:
		return builtin.Scheduled{}, &tool.ArgumentError{Tool: "schedule_wake", Reason: fmt.Sprintf("at %s is more than %s ahead",
			at.UTC().Format(time.RFC3339), hitchtype.MaxWakeAhead)}
	}
	spec := hitchtype.TriggerSpec{ID: toolBindingID("wake-", call), At: at, Session: sid, Text: text}
	if text == "" {
		spec.Text = fmt.Sprintf("This is the wake-up you scheduled (%s) for %s.", spec.ID, spec.WithDefaults().At.Format(time.RFC3339))
	}
	out, err := sc.create(ctx, spec)
	if err != nil {
		return out, fmt.Errorf("schedule_wake: %w", err)
	}
	return out, nil
}

// Schedule registers a recurring message to the run's session.
func (sc Scheduler) Schedule(ctx context.Context, call tool.CallInfo, cronExpr, zone, text string, maxFires int64) (builtin.Scheduled, error) {
	sid, err := sc.sessionOf(ctx, call.RunID)
	if err != nil {
		return builtin.Scheduled{}, fmt.Errorf("schedule: %w", err)
	}
	spec := hitchtype.TriggerSpec{ID: toolBindingID("sched-", call), Cron: cronExpr, Zone: zone, Session: sid, Text: text, MaxFires: maxFires}
	if err := spec.Validate(); err != nil {
		return builtin.Scheduled{}, &tool.ArgumentError{Tool: "schedule", Reason: err.Error()}
	}
	cs, _ := spec.WithDefaults().Schedule()
	now, err := sc.s.cfg.Store.Now(ctx)
	if err != nil {
		return builtin.Scheduled{}, fmt.Errorf("schedule: read store clock: %w", err)
	}
	// Bound how often a model may have itself woken.
	minGap := sc.s.cfg.Triggers.MinInterval
	prev := cs.Next(now)
	for range minIntervalProbe {
		next := cs.Next(prev)
		if next.IsZero() {
			break
		}
		if gap := next.Sub(prev); gap < minGap {
			return builtin.Scheduled{}, &tool.ArgumentError{Tool: "schedule", Reason: fmt.Sprintf(
				"cron %q fires %s apart (at %s and %s): occurrences must be at least %s apart",
				cronExpr, gap, prev.Format(time.RFC3339), next.Format(time.RFC3339), minGap)}
		}
		prev = next
	}
	out, err := sc.create(ctx, spec)
	if err != nil {
		return out, fmt.Errorf("schedule: %w", err)
	}
	return out, nil
}
