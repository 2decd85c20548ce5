package hitch

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
)

// ReplayOptions choose the recorded runs Replay re-runs and the agent
// version it re-runs them on.
type ReplayOptions struct {
	// Runs names recorded runs by id.
	Runs []string
	// Filter, when Runs is empty, selects the recorded runs instead, as
	// Runs lists them (agent, statuses, creation time, text): the root
	// runs among the first Filter.Limit it lists (default and most:
	// MaxReplayRuns), newest first, leaving out earlier replays (ids
	// starting replay_). Its After is ignored.
	Filter *RunsParams
	// Version is the version of each run's agent to replay on; 0 means
	// the highest registered.
	Version int
	// RunReplayable lets a call the recording does not have run for real
	// when its tool is replayable (tool.WithReplay); otherwise such a call
	// ends the replay as diverged, and no tool body ever runs.
	RunReplayable bool
}

// The verdicts of a replay.
const (
	// ReplaySame: every turn made the recorded calls, and the run ended
	// as recorded, with the same answer.
	ReplaySame = "same"
	// ReplayDiverged: at Turn the new version called other tools or
	// arguments than the recording did, or answered where it called (or
	// the other way round).
	ReplayDiverged = "diverged"
	// ReplayAnswerChanged: the same calls, and another outcome or answer.
	ReplayAnswerChanged = "answer_changed"
	// ReplayUnfinished: the replay parked (an approval a replayable
	// call's policy asked for, say) before it could be judged.
	ReplayUnfinished = "unfinished"
)

// ReplayResult is what one replay found.
type ReplayResult struct {
	// Run is the recorded run; Replay the run that replayed it, a fork of
	// Run at position 1 on Agent's Version.
	Run, Replay string
	Agent       string
	Version     int
	// Verdict is ReplaySame, ReplayDiverged, ReplayAnswerChanged or
	// ReplayUnfinished.
	Verdict string
	// Turn, for a divergence, is the turn (from 1) it happened at;
	// Recorded and Replayed say what each run did there (its calls as
	// name(arguments), or "answer: ..." for a final text).
	Turn               int
	Recorded, Replayed string
	// RecordedOutcome and ReplayOutcome are the runs' outcomes (nil when
	// one has not ended).
	RecordedOutcome, ReplayOutcome *Outcome
	// Fields, for a changed typed answer (both JSON objects), names the
	// top-level fields whose values differ, sorted.
	Fields []string
	// RecordedUsage and ReplayUsage are each run's usage; the costs are
	// nil when not priced.
	RecordedUsage, ReplayUsage     Usage
	RecordedCostUSD, ReplayCostUSD *float64
}

// Replay re-runs recorded runs on an agent version in a sandbox of recorded
// effects, one after the other, and says for each whether the new version
// decided the same. Each replay is a fork of the recorded run at position 1
// (its start) on the chosen version: when the new version calls a tool with
// the same name and arguments as the recording did at that point, the
// recorded result is served and nothing runs (no policy is asked, no
// approval, no body); a call the recording does not have ends the replay as
// diverged (unless opts.RunReplayable lets a replayable tool run). Model
// calls are real: they are what is being tested, and they cost what they
// cost. The replay runs stay in the store like any run.
func (rt *Runtime) Replay(ctx context.Context, opts ReplayOptions) ([]ReplayResult, error) {
	ids, err := rt.replayRuns(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := make([]ReplayResult, 0, len(ids))
	for _, id := range ids {
		res, err := rt.replayOne(ctx, id, opts)
		if err != nil {
			return out, fmt.Errorf("replay %s: %w", id, err)
		}
		out = append(out, res)
	}
	return out, nil
}

// replayRuns resolves the recorded runs opts names.
func (rt *Runtime) replayRuns(ctx context.Context, opts ReplayOptions) ([]string, error) {
	if len(opts.Runs) > MaxReplayRuns {
		return nil, fmt.Errorf("replay: %d runs, at most %d at once", len(opts.Runs), MaxReplayRuns)
	}
	if len(opts.Runs) > 0 {
		return opts.Runs, nil
	}
	if opts.Filter == nil {
		return nil, errors.New("replay: name the runs, or give a filter")
	}
	p := *opts.Filter
	p.After = ""
	if p.Limit == 0 || p.Limit > MaxReplayRuns {
		p.Limit = MaxReplayRuns
	}
	page, _, err := rt.Runs(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	ids := make([]string, 0, len(page))
	for _, r := range page {
		// A sub-agent is replayed with its parent; a replay is not
		// replayed again.
		if r.ParentID == "" && !strings.HasPrefix(LocalID(r.ID), replayPrefix) {
			ids = append(ids, r.ID)
		}
	}
	return ids, nil
}

func (rt *Runtime) replayOne(ctx context.Context, id string, opts ReplayOptions) (ReplayResult, error) {
	src, err := rt.Get(ctx, id)
	if err != nil {
		return ReplayResult{}, err
	}
	agent, err := rt.agentNamed(src.Agent, opts.Version)
	if err != nil {
		return ReplayResult{}, err
	}
	res, err := rt.fork(ctx, src.ID, 1, ForkOptions{ID: hitchtype.NewID(replayPrefix, 10), Version: agent.Version(),
		replay: true, runReplayable: opts.RunReplayable})
	if err != nil {
		return ReplayResult{}, err
	}
	run, err := rt.Await(ctx, res.Run.ID)
	if err != nil {
		return ReplayResult{}, err
	}
	recorded, err := rt.eng.View(ctx, src.ID)
	if err != nil {
		return ReplayResult{}, err
	}
	replayed, err := rt.eng.View(ctx, run.ID)
	if err != nil {
		return ReplayResult{}, err
	}
	out := ReplayResult{Run: src.ID, Replay: run.ID, Agent: agent.Name(), Version: agent.Version(),
		RecordedOutcome: src.Outcome, ReplayOutcome: run.Outcome,
		RecordedUsage: recorded.Usage, ReplayUsage: replayed.Usage, RecordedCostUSD: recorded.CostUSD, ReplayCostUSD: replayed.CostUSD}
	turn := engine.Diverged(recorded.Turns, replayed.Turns)
	switch {
	case turn > 0:
		out.Verdict, out.Turn = ReplayDiverged, turn
		out.Recorded, out.Replayed = turnText(recorded.Turns, turn), turnText(replayed.Turns, turn)
	case run.Outcome == nil:
		out.Verdict = ReplayUnfinished
	case src.Outcome == nil || src.Outcome.Status != run.Outcome.Status || src.Outcome.Answer != run.Outcome.Answer:
		out.Verdict = ReplayAnswerChanged
		if src.Outcome != nil {
			out.Fields = changedFields(src.Outcome.Answer, run.Outcome.Answer)
		}
	default:
		out.Verdict = ReplaySame
	}
	return out, nil
}

// replayPrefix starts the id of every replay run.
const replayPrefix = "replay_"

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
