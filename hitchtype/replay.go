package hitchtype

// ReplayOptions choose the recorded runs Replay re-runs and the agent
// version it re-runs them on.
type ReplayOptions struct {
	// Runs names recorded runs by id.
	Runs []string
	// Filter, when Runs is empty, selects the recorded runs instead, as
	// Runs lists them (agent, statuses, creation time, text): the root
	// runs among the first Filter.Limit it lists (default and most:
	// 100), newest first, leaving out earlier replays (ids
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
