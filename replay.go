package hitch

import (
	"context"

	"github.com/hitch-dev/hitch/hitchtype"
)

// Replays: the types are hitchtype's.
type (
	// ReplayOptions choose the recorded runs Replay re-runs (by id, or a
	// filter of at most MaxReplayRuns) and the agent version it re-runs
	// them on.
	ReplayOptions = hitchtype.ReplayOptions
	// ReplayResult is what one replay found.
	ReplayResult = hitchtype.ReplayResult
)

// The verdicts of a replay (see hitchtype.ReplaySame).
const (
	// ReplaySame: every turn made the recorded calls, and the run ended
	// as recorded, with the same answer.
	ReplaySame = hitchtype.ReplaySame
	// ReplayDiverged: at Turn the new version called other tools or
	// arguments than the recording did, or answered where it called (or
	// the other way round).
	ReplayDiverged = hitchtype.ReplayDiverged
	// ReplayAnswerChanged: the same calls, and another outcome or answer.
	ReplayAnswerChanged = hitchtype.ReplayAnswerChanged
	// ReplayUnfinished: the replay parked (an approval a replayable
	// call's policy asked for, say) before it could be judged.
	ReplayUnfinished = hitchtype.ReplayUnfinished
)

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
	return rt.n.Replay(ctx, opts, MaxReplayRuns)
}
