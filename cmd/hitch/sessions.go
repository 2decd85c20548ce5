package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/sessions"
)

func newSessions(g *globals) *cobra.Command {
	session, message := args(1, "a session id"), args(2, "a session id and a message id")
	cmd := group("sessions", "List, inspect and talk to sessions (conversations worked one message at a time)",
		newSessionsList(g), newSessionsSend(g), newSessionsEdit(g), newSessionsInterrupt(g))
	cmd.AddCommand(leaves(g,
		leaf{"show SESSION", "Show a session: its submissions with outcomes and usage, and its queue", session, needRuntime, showSession},
		leaf{"queue SESSION", "List a session's queued messages in the order they will start", session, needRuntime, shows(backend.Queue, printQueue)},
		leaf{"remove SESSION MESSAGE", "Take a queued message out of the queue (one that has started is refused)", message, needRuntime, removeMessage},
	)...)
	return cmd
}

func newSessionsList(g *globals) *cobra.Command {
	var pg page
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List sessions by id (--after pages on)",
		Args:    args(0, "no arguments"),
		PreRunE: func(*cobra.Command, []string) error { return pg.check() },
		RunE: withBackend(g, needRuntime, func(ctx context.Context, v *verb, _ []string) error {
			list, err := v.b.Sessions(ctx, sessions.ListParams{Tenant: pg.tenant, After: pg.after, Limit: pg.limit})
			if err != nil {
				return err
			}
			return printList(v, list, func(s sessions.Session) any { return sessionJSON(s) }, "SESSION\tAGENT\tACTIVE RUN\tQUEUED\tUPDATED",
				func(s sessions.Session) string {
					return fmt.Sprintf("%s\t%s v%d\t%s\t%d\t%s", s.ID, s.Agent, s.Version, or(s.ActiveRun, "-"), s.Queued,
						s.UpdatedAt.Format("2006-01-02 15:04:05"))
				})
		}),
	}
	pg.flags(cmd, "list sessions whose id sorts after this one", 100, "sessions")
	return cmd
}

type sessionLine struct {
	ID        string          `json:"id"`
	Tenant    string          `json:"tenant"`
	Agent     string          `json:"agent"`
	Version   int             `json:"version"`
	Metadata  json.RawMessage `json:"metadata"`
	ActiveRun string          `json:"active_run,omitempty"`
	Position  int64           `json:"position"`
	Queued    int             `json:"queued"`
	CreatedAt string          `json:"created_at"`
	UpdatedAt string          `json:"updated_at"`
}

func sessionJSON(s sessions.Session) sessionLine {
	const ts = "2006-01-02T15:04:05.000000Z"
	return sessionLine{ID: s.ID, Tenant: s.Tenant, Agent: s.Agent, Version: s.Version, Metadata: s.Metadata, ActiveRun: s.ActiveRun,
		Position: s.Position, Queued: s.Queued, CreatedAt: s.CreatedAt.UTC().Format(ts), UpdatedAt: s.UpdatedAt.UTC().Format(ts)}
}

type submissionLine struct {
	MessageID string                      `json:"message_id"`
	RunID     string                      `json:"run_id"`
	Text      string                      `json:"text"`
	Joined    []string                    `json:"joined,omitempty"`
	Outcome   hitchtype.SubmissionOutcome `json:"outcome,omitempty"`
	Status    hitchtype.Status            `json:"status"`
	Reason    string                      `json:"reason,omitempty"`
	Answer    string                      `json:"answer,omitempty"`
	Error     string                      `json:"error,omitempty"`
	Usage     *hitch.Usage                `json:"usage"`
	CostUSD   *float64                    `json:"cost_usd"`
}

type queuedLine struct {
	ID       string        `json:"id"`
	Position int64         `json:"position"`
	Mode     sessions.Mode `json:"mode"`
	Text     string        `json:"text"`
}

func statusJSON(st sessions.Status, cost *hitch.RunningCost) any {
	subs := make([]submissionLine, 0, len(st.Submissions))
	for _, s := range st.Submissions {
		subs = append(subs, submissionLine{s.MessageID, s.RunID, s.Text, s.Joined, s.Outcome, s.Status, s.Reason, s.Answer, s.Error, s.Usage, s.CostUSD})
	}
	q := make([]queuedLine, 0, len(st.Queue))
	for _, m := range st.Queue {
		q = append(q, queuedLine{m.ID, m.Position, m.Mode, m.Text})
	}
	return struct {
		Session     sessionLine      `json:"session"`
		Queue       []queuedLine     `json:"queue"`
		Submissions []submissionLine `json:"submissions"`
		Usage       hitch.Usage      `json:"usage"`
		CostUSD     *float64         `json:"cost_usd"`
		RunningCost *runningCostView `json:"running_cost,omitempty"`
	}{sessionJSON(st.Session), q, subs, st.Usage, st.CostUSD, costJSON(cost)}
}

func (v *verb) printStatus(st sessions.Status) { v.printStatusCost(st, nil) }

// printStatusCost prints a session's status and, when cost is set, what
// the session has cost so far.
func (v *verb) printStatusCost(st sessions.Status, cost *hitch.RunningCost) {
	if v.g.json {
		v.printJSON(statusJSON(st, cost))
		return
	}
	w := v.g.stdout
	s := st.Session
	fmt.Fprintf(w, "session %s: agent %s v%d, %d entries, %d queued", s.ID, s.Agent, s.Version, s.Position, s.Queued)
	if s.ActiveRun != "" {
		fmt.Fprintf(w, ", working (run %s)", s.ActiveRun)
	}
	fmt.Fprintln(w)
	for i, sub := range st.Submissions {
		state := string(sub.Outcome)
		if state == "" {
			state = "running"
		}
		fmt.Fprintf(w, "  %d. %s  %s: %s\n", i+1, sub.MessageID, state, clip(sub.Text, 100))
		if len(sub.Joined) > 0 {
			fmt.Fprintf(w, "     steered by %s\n", strings.Join(sub.Joined, ", "))
		}
		switch {
		case sub.Answer != "":
			fmt.Fprintf(w, "     answer: %s\n", clip(sub.Answer, 300))
		case sub.Error != "":
			fmt.Fprintf(w, "     %s: %s\n", or(sub.Reason, string(sub.Status)), clip(sub.Error, 300))
		}
	}
	for _, m := range st.Queue {
		fmt.Fprintf(w, "  queued %s (%s): %s\n", m.ID, m.Mode, clip(m.Text, 100))
	}
	fmt.Fprintf(w, "usage: %d generations, input %s, output %s tokens\n", st.Usage.Generations, count(st.Usage.InputTokens), count(st.Usage.OutputTokens))
	if cost != nil {
		fmt.Fprintf(w, "cost: %s\n", costLine(*cost, "in the session"))
	}
}

// showSession is the body of sessions show.
func showSession(ctx context.Context, v *verb, a []string) error {
	st, err := v.b.SessionStatus(ctx, a[0])
	if err != nil {
		return err
	}
	cost, err := v.b.SessionCost(ctx, a[0])
	if err != nil {
		return err
	}
	v.printStatusCost(st, &cost)
	return nil
}

// ensureSession makes sure the session exists, creating it for the named
// agent (empty: the only one) when it does not.
func ensureSession(ctx context.Context, b backend, id, agent string) error {
	_, err := b.Session(ctx, id)
	if exitOf(err) != exitNotFound {
		return err
	}
	return b.CreateSession(ctx, id, agent)
}

// sendModes are the modes a message is sent with.
var sendModes = []sessions.Mode{sessions.ModeQueue, sessions.ModeSteer, sessions.ModeInterrupt}

func newSessionsSend(g *globals) *cobra.Command {
	var key, mode, agent string
	var detach bool
	cmd := &cobra.Command{
		Use:   "send SESSION TEXT",
		Short: "Send a message (creating the session if needed) and follow the work until the session is at rest",
		Long: "Send admits the message durably, then follows the session's work and prints the outcome. With --detach it\n" +
			"returns once the message is admitted and leaves the work to a worker (hitch worker).",
		Args: args(2, "a session id and the text"),
		PreRunE: func(_ *cobra.Command, a []string) error {
			if !slices.Contains(sendModes, sessions.Mode(mode)) {
				return usageError{fmt.Errorf("--mode %q: want queue, steer or interrupt", mode)}
			}
			return checkMessage(a[1])
		},
		RunE: withBackend(g, needNew, func(ctx context.Context, v *verb, a []string) error {
			if err := ensureSession(ctx, v.b, a[0], agent); err != nil {
				return err
			}
			res, err := v.b.Send(ctx, a[0], a[1], sessions.SendOptions{IdempotencyKey: key, Mode: sessions.Mode(mode)})
			if err != nil {
				return err
			}
			if detach || g.json {
				if g.json {
					v.printJSON(struct {
						MessageID string        `json:"message_id"`
						Position  int64         `json:"position"`
						Mode      sessions.Mode `json:"mode"`
						Duplicate bool          `json:"duplicate"`
					}{res.MessageID, res.Position, res.Mode, res.Duplicate})
				} else {
					fmt.Fprintf(g.stdout, "admitted %s at position %d (%s)\n", res.MessageID, res.Position, res.Mode)
				}
				if detach {
					return nil
				}
			}
			return v.atRest(ctx, a[0], !g.json)
		}),
	}
	cmd.Flags().StringVar(&key, "key", "", "idempotency key: a retried send with the same key admits the message once")
	cmd.Flags().StringVar(&mode, "mode", "queue", "queue, steer or interrupt")
	cmd.Flags().StringVar(&agent, "agent", "", "agent of a new session (default: the config's only agent)")
	cmd.Flags().BoolVar(&detach, "detach", false, "return once admitted; a worker does the work")
	return cmd
}

// printQueue prints a session's queued messages, a line each.
func printQueue(v *verb, q []sessions.QueuedMessage) {
	for _, m := range q {
		if v.g.json {
			v.printJSON(queuedLine{m.ID, m.Position, m.Mode, m.Text})
		} else {
			fmt.Fprintf(v.g.stdout, "%s  %d  %s  %s\n", m.ID, m.Position, m.Mode, clip(m.Text, 120))
		}
	}
}

func newSessionsEdit(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "edit SESSION MESSAGE TEXT",
		Short:   "Replace the text of a queued message (one that has started is refused)",
		Args:    args(3, "a session id, a message id and the new text"),
		PreRunE: func(_ *cobra.Command, a []string) error { return checkMessage(a[2]) },
		RunE: withBackend(g, needRuntime, func(ctx context.Context, v *verb, a []string) error {
			if err := v.b.Edit(ctx, a[0], a[1], a[2]); err != nil {
				return err
			}
			v.done("edited", a[1])
			return nil
		}),
	}
}

// removeMessage is the body of sessions remove.
func removeMessage(ctx context.Context, v *verb, a []string) error {
	if err := v.b.Remove(ctx, a[0], a[1]); err != nil {
		return err
	}
	v.done("removed", a[1])
	return nil
}

func newSessionsInterrupt(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "interrupt SESSION [TEXT]",
		Short: "Interrupt the session's current submission; with TEXT, that message runs next",
		Args: func(cmd *cobra.Command, a []string) error {
			if len(a) < 1 || len(a) > 2 {
				return usageError{fmt.Errorf("%s wants a session id and optionally a message", cmd.CommandPath())}
			}
			if len(a) == 2 {
				return checkMessage(a[1])
			}
			return nil
		},
		RunE: withBackend(g, needRuntime, func(ctx context.Context, v *verb, a []string) error {
			var err error
			if len(a) == 2 {
				_, err = v.b.Send(ctx, a[0], a[1], sessions.SendOptions{Mode: sessions.ModeInterrupt})
			} else {
				err = v.b.Interrupt(ctx, a[0])
			}
			if err != nil {
				return err
			}
			return v.atRest(ctx, a[0], true)
		}),
	}
}

// atRest waits until the session id has no active submission and, with
// print, prints its status.
func (v *verb) atRest(ctx context.Context, id string, print bool) error {
	if err := v.b.AwaitSession(ctx, id); err != nil || !print {
		return err
	}
	st, err := v.b.SessionStatus(ctx, id)
	if err != nil {
		return err
	}
	v.printStatus(st)
	return nil
}

func (v *verb) done(what, id string) {
	if v.g.json {
		v.printJSON(map[string]string{"result": what, "message_id": id})
		return
	}
	fmt.Fprintf(v.g.stdout, "%s %s\n", what, id)
}
