package hitch

import (
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// Infinite, as a timeout, leaves the wait unbounded.
const Infinite = hitchtype.Infinite

// Defaults of the Runtime's Config. The defaults of Limits are in
// hitchtype; each is also a row of defaults.Table, which docs/defaults.md
// renders, and a test keeps the two in step.
const (
	DefaultLeaseTTL         = 30 * time.Second
	DefaultForceSettleGrace = 60 * time.Second
	DefaultCancelPoll       = time.Second
	// DefaultMaxRunners is how many runs a node drives at once; see
	// Config.MaxRunners.
	DefaultMaxRunners = 4096
	// DefaultStepsPerCore times GOMAXPROCS is how many runs do a step's
	// CPU work at once; see Config.StepConcurrency.
	DefaultStepsPerCore = 2
	// DefaultClaimBatch is how many due runs one sweeper pass claims.
	DefaultClaimBatch = 64
	// DefaultClaimCooldown is the sweeper's pause after a pass that
	// claimed a full batch, so that the other nodes of a store claim
	// their share of a backlog.
	DefaultClaimCooldown = 50 * time.Millisecond
	// DefaultFollowBuffer is how many entries a follower of a run may leave
	// unread before it is cut; see Config.FollowBuffer.
	DefaultFollowBuffer = 256
	// DefaultFollowPoll is how often a followed run's reader reads its
	// journal without a commit of this runtime; see Config.FollowPoll.
	DefaultFollowPoll = time.Second
	// DefaultLeaderTTL is how long a leadership won by Runtime.Lead lasts
	// without re-election.
	DefaultLeaderTTL = 15 * time.Second
	// DefaultDrainWindow is how long a graceful stop (hitch worker on
	// SIGTERM) lets running tool bodies and model calls finish.
	DefaultDrainWindow = 30 * time.Second
	// DefaultSweepInterval is how often hitch worker's sweeper looks for
	// due runs.
	DefaultSweepInterval = time.Second
	// DefaultSweepMaxBackoff bounds the sweeper's wait after store errors.
	DefaultSweepMaxBackoff = 30 * time.Second
	// MaxReplayRuns bounds the recorded runs of one Replay.
	MaxReplayRuns = 100
)

// Defaults of retention.
const (
	// DefaultRetention is how long a settled family is kept after its
	// last run's last change before the leader prunes it.
	DefaultRetention = 30 * 24 * time.Hour
	// DefaultPruneEvery is how often the leader prunes.
	DefaultPruneEvery = time.Minute
	// DefaultPruneBatch is how many families one prune transaction
	// deletes, and how many expired session keys.
	DefaultPruneBatch = store.DefaultPruneLimit
	// MaxPruneBatches bounds the batches of one pass of the leader's
	// pruning; what is left waits for the next pass.
	MaxPruneBatches = 10
)
