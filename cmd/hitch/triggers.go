package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch/triggers"
)

func newTriggers(g *globals) *cobra.Command {
	cmd := group("triggers", "List, inspect, pause, resume and remove trigger bindings (schedules that start runs or send messages)",
		newTriggersList(g))
	id, print := args(1, "a trigger id"), (*verb).printTrigger
	cmd.AddCommand(leaves(g,
		leaf{"show TRIGGER", "Show a binding: its schedule, target, lifecycle, counts and next occurrence", id, needRuntime, shows(backend.Trigger, print)},
		leaf{"pause TRIGGER", "Pause a binding: its occurrences wait, judged by its missed policy on resume", id, needRuntime, shows(backend.PauseTrigger, print)},
		leaf{"resume TRIGGER", "Resume a paused binding", id, needRuntime, shows(backend.ResumeTrigger, print)},
		leaf{"remove TRIGGER", "Remove a binding (an occurrence being dispatched as it goes may still fire)", id, needRuntime, removeTrigger},
	)...)
	return cmd
}

// triggerLine is a binding in --json output.
type triggerLine struct {
	ID          string        `json:"id"`
	Tenant      string        `json:"tenant"`
	SessionID   string        `json:"session_id,omitempty"`
	State       string        `json:"state"`
	Spec        triggers.Spec `json:"spec"`
	FireCount   int64         `json:"fire_count"`
	MissedCount int64         `json:"missed_count"`
	SkipCount   int64         `json:"skip_count"`
	LastSkip    string        `json:"last_skip,omitempty"`
	SkipReason  string        `json:"skip_reason,omitempty"`
	LastFire    string        `json:"last_fire,omitempty"`
	NextFire    string        `json:"next_fire,omitempty"`
	Failures    int           `json:"failures,omitempty"`
	LastError   string        `json:"last_error,omitempty"`
	ClaimOwner  string        `json:"claim_owner,omitempty"`
	CreatedAt   string        `json:"created_at"`
	UpdatedAt   string        `json:"updated_at"`
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000Z")
}

func triggerJSON(t triggers.Trigger) triggerLine {
	return triggerLine{ID: t.Spec.ID, Tenant: t.Spec.Tenant, SessionID: t.SessionID, State: t.State, Spec: t.Spec,
		FireCount: t.FireCount, MissedCount: t.MissedCount, SkipCount: t.SkipCount, LastSkip: stamp(t.LastSkip), SkipReason: t.SkipReason,
		LastFire: stamp(t.LastFire), NextFire: stamp(t.NextFire),
		Failures: t.Failures, LastError: t.LastError, ClaimOwner: t.ClaimOwner, CreatedAt: stamp(t.CreatedAt), UpdatedAt: stamp(t.UpdatedAt)}
}

func schedule(s triggers.Spec) string {
	if s.Cron == "" {
		return "at " + s.At.UTC().Format(time.RFC3339)
	}
	if s.Zone != "" && s.Zone != "UTC" {
		return s.Cron + " (" + s.Zone + ")"
	}
	return s.Cron
}

func target(s triggers.Spec) string {
	if s.Session != "" {
		return "send to session " + s.Session
	}
	return "start " + s.Agent
}

func whenOr(t time.Time, d string) string {
	if t.IsZero() {
		return d
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func newTriggersList(g *globals) *cobra.Command {
	var pg page
	var session, state string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List trigger bindings by id (--after pages on)",
		Args:  args(0, "no arguments"),
		PreRunE: func(*cobra.Command, []string) error {
			switch state {
			case "", "active", "paused", "done":
			default:
				return usageError{fmt.Errorf("--state %q: want active, paused or done", state)}
			}
			return pg.check()
		},
		RunE: withBackend(g, needRuntime, func(ctx context.Context, v *verb, _ []string) error {
			list, err := v.b.Triggers(ctx, triggers.ListOptions{After: pg.after, Limit: pg.limit, SessionID: session, State: state})
			if err != nil {
				return err
			}
			return printList(v, list, func(t triggers.Trigger) any { return triggerJSON(t) }, "TRIGGER\tSTATE\tSCHEDULE\tTARGET\tFIRES\tNEXT",
				func(t triggers.Trigger) string {
					return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%s", t.Spec.ID, t.State, clip(schedule(t.Spec), 40), clip(target(t.Spec), 40),
						t.FireCount, whenOr(t.NextFire, "-"))
				})
		}),
	}
	pg.flags(cmd, "list bindings whose id sorts after this one", 100, "")
	cmd.Flags().StringVar(&session, "session", "", "only the bindings a session registered")
	cmd.Flags().StringVar(&state, "state", "", "only bindings in this state: active, paused or done")
	return cmd
}

func (v *verb) printTrigger(t triggers.Trigger) {
	if v.g.json {
		v.printJSON(triggerJSON(t))
		return
	}
	w := v.g.stdout
	s := t.Spec
	fmt.Fprintf(w, "trigger %s: %s\n", s.ID, t.State)
	fmt.Fprintf(w, "  schedule: %s; missed occurrences: %s (grace %s)\n", schedule(s), s.Missed, s.Grace)
	fmt.Fprintf(w, "  target:   %s\n", target(s))
	switch {
	case s.Session != "":
		fmt.Fprintf(w, "  text:     %s\n", clip(s.Text, 200))
	case s.Input != "":
		fmt.Fprintf(w, "  input:    %s\n", clip(s.Input, 200))
	}
	if s.MaxFires > 0 || !s.ExpiresAt.IsZero() {
		fmt.Fprintf(w, "  ends:     after %d fires, at %s\n", s.MaxFires, whenOr(s.ExpiresAt, "no time"))
	}
	fmt.Fprintf(w, "  fired %d times (last %s), missed %d; next %s\n", t.FireCount, whenOr(t.LastFire, "never"), t.MissedCount,
		whenOr(t.NextFire, "none"))
	if t.SkipCount > 0 {
		fmt.Fprintf(w, "  %d skipped by a pre_trigger hook (last %s): %s\n", t.SkipCount, whenOr(t.LastSkip, "-"), clip(t.SkipReason, 300))
	}
	if t.SessionID != "" {
		fmt.Fprintf(w, "  registered by session %s\n", t.SessionID)
	}
	if t.Failures > 0 {
		fmt.Fprintf(w, "  %d failed dispatches, retried at %s: %s\n", t.Failures, whenOr(t.ClaimUntil, "-"), clip(t.LastError, 300))
	}
}

// removeTrigger is the body of triggers remove.
func removeTrigger(ctx context.Context, v *verb, a []string) error {
	removed, err := v.b.RemoveTrigger(ctx, a[0])
	if err != nil {
		return err
	}
	if v.g.json {
		v.printJSON(struct {
			ID      string `json:"id"`
			Removed bool   `json:"removed"`
		}{a[0], removed})
	} else if removed {
		fmt.Fprintf(v.g.stdout, "removed trigger %s\n", a[0])
	}
	if !removed {
		return withCode(exitNotFound, fmt.Errorf("remove trigger %s: %w", a[0], triggers.ErrNotFound))
	}
	return nil
}

// syncTriggers stores the config's bindings, replacing those whose
// definition changed.
func syncTriggers(ctx context.Context, e *env) error {
	for _, t := range e.cfg.Triggers {
		if _, _, err := e.rt.Triggers().Create(ctx, t.Spec, triggers.Options{Replace: true, Paused: t.Paused}); err != nil {
			return fmt.Errorf("config trigger %s: %w", t.Spec.ID, err)
		}
	}
	return nil
}
