package server

import (
	"context"
	"strings"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/hitchtype"
)

// statuses are every run status, in lifecycle order.
var statuses = []hitchtype.Status{hitchtype.StatusQueued, hitchtype.StatusRunning, hitchtype.StatusWaiting,
	hitchtype.StatusCompleted, hitchtype.StatusFailed, hitchtype.StatusCancelled, hitchtype.StatusAnswerInvalid,
	hitchtype.StatusBudgetExhausted}

// applyFilters checks the filters the runs list and its counts share, and
// sets them on p.
func applyFilters(p *hitch.RunsParams, createdAfter, createdBefore time.Time, q string) error {
	if !createdAfter.IsZero() && !createdBefore.IsZero() && !createdAfter.Before(createdBefore) {
		return invalid("query.created_after", "is not before created_before")
	}
	p.CreatedAfter, p.CreatedBefore, p.Text = createdAfter, createdBefore, strings.TrimSpace(q)
	return nil
}

func (s *Server) countRuns(ctx context.Context, in *struct {
	Agent         string    `query:"agent" maxLength:"64" doc:"Only runs of this agent."`
	CreatedAfter  time.Time `query:"created_after" doc:"Only runs created at or after this time (RFC 3339)."`
	CreatedBefore time.Time `query:"created_before" doc:"Only runs created before this time (RFC 3339)."`
	Q             string    `query:"q" maxLength:"200" doc:"Only runs whose id, agent or title (the head of the input) contains this text, ignoring ASCII case."`
}) (*body[api.RunCounts], error) {
	rp := hitch.RunsParams{Agent: in.Agent}
	if err := applyFilters(&rp, in.CreatedAfter, in.CreatedBefore, in.Q); err != nil {
		return nil, err
	}
	m, err := s.scope(ctx).RunCountsFor(ctx, rp)
	if err != nil {
		return nil, s.fail("count runs", err)
	}
	out := api.RunCounts{Counts: make(map[string]int, len(statuses))}
	for _, st := range statuses {
		out.Counts[string(st)] = m[st]
		out.Total += m[st]
	}
	if m[hitchtype.StatusCompleted] > 0 {
		// A turn-limit ending is a completion the person on call
		// tells apart from an answer.
		mp := rp
		mp.Statuses, mp.Reasons = []hitchtype.Status{hitchtype.StatusCompleted}, []string{"max_turns"}
		mt, err := s.scope(ctx).RunCountsFor(ctx, mp)
		if err != nil {
			return nil, s.fail("count runs", err)
		}
		out.MaxTurns = mt[hitchtype.StatusCompleted]
	}
	return &body[api.RunCounts]{out}, nil
}
