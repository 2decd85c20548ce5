package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/internal/scope"
)

// ReplayPrefix starts the id of every replay run.
const ReplayPrefix = "replay_"

// ReplayRuns resolves the recorded runs opts names, at most most of them.
func (n *Node) ReplayRuns(ctx context.Context, opts hitchtype.ReplayOptions, most int) ([]string, error) {
	if len(opts.Runs) > most {
		return nil, fmt.Errorf("replay: %d runs, at most %d at once", len(opts.Runs), most)
	}
	if len(opts.Runs) > 0 {
		return opts.Runs, nil
	}
	if opts.Filter == nil {
		return nil, errors.New("replay: name the runs, or give a filter")
	}
	p := *opts.Filter
	p.After = ""
	if p.Limit == 0 || p.Limit > most {
		p.Limit = most
	}
	page, _, err := n.Runs(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	ids := make([]string, 0, len(page))
	for _, r := range page {
		// A sub-agent is replayed with its parent; a replay is not
		// replayed again.
		if r.ParentID == "" && !strings.HasPrefix(scope.LocalID(r.ID), ReplayPrefix) {
			ids = append(ids, r.ID)
		}
	}
	return ids, nil
}

// Judge says whether the replay run of the recorded run src decided the
// same, on agent a.
func (n *Node) Judge(ctx context.Context, a *Agent, src, run hitchtype.Run) (hitchtype.ReplayResult, error) {
	recorded, err := n.Eng.View(ctx, src.ID)
	if err != nil {
		return hitchtype.ReplayResult{}, err
	}
	replayed, err := n.Eng.View(ctx, run.ID)
	if err != nil {
		return hitchtype.ReplayResult{}, err
	}
	out := hitchtype.ReplayResult{Run: src.ID, Replay: run.ID, Agent: a.Eng.Name, Version: a.Eng.Version,
		RecordedOutcome: src.Outcome, ReplayOutcome: run.Outcome,
		RecordedUsage: recorded.Usage, ReplayUsage: replayed.Usage, RecordedCostUSD: recorded.CostUSD, ReplayCostUSD: replayed.CostUSD}
	turn := engine.Diverged(recorded.Turns, replayed.Turns)
	switch {
	case turn > 0:
		out.Verdict, out.Turn = hitchtype.ReplayDiverged, turn
		out.Recorded, out.Replayed = turnText(recorded.Turns, turn), turnText(replayed.Turns, turn)
	case run.Outcome == nil:
		out.Verdict = hitchtype.ReplayUnfinished
	case src.Outcome == nil || src.Outcome.Status != run.Outcome.Status || src.Outcome.Answer != run.Outcome.Answer:
		out.Verdict = hitchtype.ReplayAnswerChanged
		if src.Outcome != nil {
			out.Fields = changedFields(src.Outcome.Answer, run.Outcome.Answer)
		}
	default:
		out.Verdict = hitchtype.ReplaySame
	}
	return out, nil
}

// turnText says what a run did at turn n (from 1).
func turnText(turns []engine.Turn, n int) string {
	if n > len(turns) {
		return "nothing: the run had ended"
	}
	t := turns[n-1]
	if len(t.Calls) == 0 {
		return "answer: " + t.Text
	}
	calls := make([]string, len(t.Calls))
	for i, c := range t.Calls {
		calls[i] = engine.CallText(c)
	}
	return strings.Join(calls, ", ")
}

// changedFields names the top-level fields whose values differ between
// two JSON objects, sorted; nil when either is not an object.
func changedFields(a, b string) []string {
	var ma, mb map[string]any
	if json.Unmarshal([]byte(a), &ma) != nil || json.Unmarshal([]byte(b), &mb) != nil || ma == nil || mb == nil {
		return nil
	}
	var out []string
	for k, v := range ma {
		if w, ok := mb[k]; !ok || !reflect.DeepEqual(v, w) {
			out = append(out, k)
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
