package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/client"
	"github.com/hitch-dev/hitch/hitchtype"
)

func sessionOf(s api.Session) hitch.Session {
	return hitch.Session{ID: s.ID, Tenant: s.Tenant, Agent: s.Agent, Version: s.Version, Metadata: s.Metadata, ActiveRun: s.ActiveRun,
		Position: s.Position, Queued: s.Queued, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

func usageOf(u api.Usage) hitch.Usage {
	return hitch.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedInputTokens: u.CachedInputTokens, Generations: u.Generations}
}

func queueOf(q []api.QueuedMessage) []hitch.QueuedMessage {
	out := make([]hitch.QueuedMessage, 0, len(q))
	for _, m := range q {
		out = append(out, hitch.QueuedMessage{ID: m.ID, Position: m.Position, Mode: hitch.SendMode(m.Mode), Text: m.Text})
	}
	return out
}

func sessionStatusOf(st api.SessionStatus) hitch.SessionStatus {
	out := hitch.SessionStatus{Session: sessionOf(st.Session), Queue: queueOf(st.Queue), Usage: usageOf(st.Usage), CostUSD: st.CostUSD}
	for _, s := range st.Submissions {
		sub := hitch.Submission{MessageID: s.MessageID, RunID: s.RunID, Text: s.Text, Joined: s.Joined,
			Outcome: hitchtype.SubmissionOutcome(s.Outcome), Status: hitchtype.Status(s.Status), Reason: s.Reason,
			Answer: s.Answer, Error: s.Error, CostUSD: s.CostUSD}
		if s.Usage != nil {
			u := usageOf(*s.Usage)
			sub.Usage = &u
		}
		out.Submissions = append(out.Submissions, sub)
	}
	return out
}

func (r *remote) env() *env { return &env{g: r.g, out: r.out} }

func remoteSessionsList(ctx context.Context, r *remote, _ []string) error {
	limit, _ := r.cmd.Flags().GetInt("limit")
	page, err := r.c.Sessions(ctx, r.str("after"), limit)
	if err != nil {
		return err
	}
	if r.g.json {
		for _, s := range page.Sessions {
			r.printJSON(sessionJSON(sessionOf(s)))
		}
		return nil
	}
	w := tabwriter.NewWriter(r.g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SESSION\tAGENT\tACTIVE RUN\tQUEUED\tUPDATED")
	for _, s := range page.Sessions {
		fmt.Fprintf(w, "%s\t%s v%d\t%s\t%d\t%s\n", s.ID, s.Agent, s.Version, or(s.ActiveRun, "-"), s.Queued,
			s.UpdatedAt.Format("2006-01-02 15:04:05"))
	}
	return w.Flush()
}

func remoteSessionsShow(ctx context.Context, r *remote, a []string) error {
	st, err := r.c.SessionStatus(ctx, a[0])
	if err != nil {
		return err
	}
	c, err := r.c.SessionCost(ctx, a[0])
	if err != nil {
		return err
	}
	r.env().printStatusCost(sessionStatusOf(st), &hitch.RunningCost{USD: c.USD, Runs: c.Runs, Live: c.Live})
	return nil
}

// atRest follows a session until it has no active submission and nothing
// queued, then prints its status.
func (r *remote) atRest(ctx context.Context, id string, print bool) error {
	ses, err := r.c.Session(ctx, id)
	if err != nil {
		return err
	}
	if ses.ActiveRun != "" || ses.Queued > 0 {
		for e, err := range r.c.FollowSession(ctx, id, ses.Position) {
			if err != nil {
				return err
			}
			if e.Kind != hitchtype.KindSubmissionEnded && e.Kind != hitchtype.KindMessageRemoved {
				continue
			}
			if ses, err = r.c.Session(ctx, id); err != nil {
				return err
			}
			if ses.ActiveRun == "" && ses.Queued == 0 {
				break
			}
		}
	}
	if !print {
		return nil
	}
	st, err := r.c.SessionStatus(ctx, id)
	if err != nil {
		return err
	}
	r.env().printStatus(sessionStatusOf(st))
	return nil
}

func remoteSessionsSend(ctx context.Context, r *remote, a []string) error {
	if _, err := r.c.Session(ctx, a[0]); errors.Is(err, client.ErrNotFound) {
		agent := r.str("agent")
		if agent == "" {
			list, err := r.c.Agents(ctx)
			if err != nil {
				return err
			}
			if len(list.Agents) != 1 {
				return usageError{fmt.Errorf("--agent: session %s is new and the server has %d agents: name one", a[0], len(list.Agents))}
			}
			agent = list.Agents[0].Name
		}
		if _, err := r.c.CreateSession(ctx, api.CreateSession{Agent: agent, ID: a[0]}); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	res, err := r.c.Send(ctx, a[0], api.Send{Text: a[1], Mode: r.str("mode")}, r.str("key"))
	if err != nil {
		return err
	}
	detach := r.boolean("detach")
	if detach || r.g.json {
		if r.g.json {
			r.printJSON(res)
		} else {
			fmt.Fprintf(r.g.stdout, "admitted %s at position %d (%s)\n", res.MessageID, res.Position, res.Mode)
		}
		if detach {
			return nil
		}
	}
	return r.atRest(ctx, a[0], !r.g.json)
}

func remoteSessionsQueue(ctx context.Context, r *remote, a []string) error {
	q, err := r.c.Queue(ctx, a[0])
	if err != nil {
		return err
	}
	for _, m := range q.Messages {
		if r.g.json {
			r.printJSON(queuedLine{m.ID, m.Position, hitch.SendMode(m.Mode), m.Text})
		} else {
			fmt.Fprintf(r.g.stdout, "%s  %d  %s  %s\n", m.ID, m.Position, m.Mode, clip(m.Text, 120))
		}
	}
	return nil
}

func remoteSessionsEdit(ctx context.Context, r *remote, a []string) error {
	if _, err := r.c.Edit(ctx, a[0], a[1], a[2]); err != nil {
		return err
	}
	r.env().done("edited", a[1])
	return nil
}

func remoteSessionsRemove(ctx context.Context, r *remote, a []string) error {
	if _, err := r.c.Remove(ctx, a[0], a[1]); err != nil {
		return err
	}
	r.env().done("removed", a[1])
	return nil
}

func remoteSessionsInterrupt(ctx context.Context, r *remote, a []string) error {
	var err error
	if len(a) == 2 {
		_, err = r.c.Send(ctx, a[0], api.Send{Text: a[1], Mode: api.ModeInterrupt}, "")
	} else {
		_, err = r.c.Interrupt(ctx, a[0])
	}
	if err != nil {
		return err
	}
	return r.atRest(ctx, a[0], true)
}
