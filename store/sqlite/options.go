package sqlite

import (
	"fmt"
	"time"
)

// Sync is how hard a commit waits for the disk.
type Sync int

const (
	// SyncFull makes every commit durable before it is acknowledged, even
	// across a power loss (SQLite's synchronous=FULL). It is the default.
	SyncFull Sync = iota
	// SyncNormal survives a crash of the process but may lose the last
	// commits on a power loss or an operating system crash
	// (synchronous=NORMAL in WAL mode). It syncs only at checkpoints.
	SyncNormal
	// SyncOff never waits for the disk (synchronous=OFF): a crash of the
	// operating system or a power loss may lose commits or damage the
	// file. For throwaway stores only; hitch doctor warns about it.
	SyncOff
)

// String returns the SQLite pragma value.
func (s Sync) String() string {
	switch s {
	case SyncFull:
		return "FULL"
	case SyncNormal:
		return "NORMAL"
	case SyncOff:
		return "OFF"
	}
	return fmt.Sprintf("Sync(%d)", int(s))
}

// Defaults and bounds of the options.
const (
	DefaultBatchSize   = 64
	MaxBatchSize       = 1024
	DefaultQueueSize   = 1024
	MaxQueueSize       = 65536
	DefaultReaders     = 4
	MaxReaders         = 64
	DefaultBusyTimeout = 5 * time.Second
	MaxBusyTimeout     = 10 * time.Minute
	// DefaultCheckpointInterval is how often the checkpointer copies the
	// WAL into the database file (when something was committed).
	DefaultCheckpointInterval = time.Second
	MaxCheckpointInterval     = time.Minute
)

// The WAL's length in pages at which a commit checkpoints in the writer:
// SQLite's default without a checkpointer, and a backstop with one (about
// 40 MiB of 4 KiB pages), reached only when the checkpointer falls behind.
const (
	walCheckpointPages = 1000
	walBackstopPages   = 10000
)

// Option configures Open.
type Option func(*config)

type config struct {
	sync        Sync
	batchSize   int
	queueSize   int
	readers     int
	busyTimeout time.Duration
	// checkpointInterval is the checkpointer's period; 0 for none.
	checkpointInterval time.Duration
	clock              func() time.Time
	readOnly           bool
	// driver is the database/sql driver name: driverName, or a test's
	// wrapper of it.
	driver string
}

func defaultConfig() config {
	return config{
		sync:               SyncFull,
		batchSize:          DefaultBatchSize,
		queueSize:          DefaultQueueSize,
		readers:            DefaultReaders,
		busyTimeout:        DefaultBusyTimeout,
		clock:              time.Now,
		checkpointInterval: DefaultCheckpointInterval,
		driver:             driverName,
	}
}

func (c config) validate() error {
	switch {
	case c.sync != SyncFull && c.sync != SyncNormal && c.sync != SyncOff:
		return fmt.Errorf("WithSync: %v is not SyncFull, SyncNormal or SyncOff", c.sync)
	case c.batchSize < 1 || c.batchSize > MaxBatchSize:
		return fmt.Errorf("WithBatchSize: %d is outside 1..%d", c.batchSize, MaxBatchSize)
	case c.queueSize < 1 || c.queueSize > MaxQueueSize:
		return fmt.Errorf("WithQueueSize: %d is outside 1..%d", c.queueSize, MaxQueueSize)
	case c.readers < 1 || c.readers > MaxReaders:
		return fmt.Errorf("WithReaders: %d is outside 1..%d", c.readers, MaxReaders)
	case c.busyTimeout < 0 || c.busyTimeout > MaxBusyTimeout:
		return fmt.Errorf("WithBusyTimeout: %v is outside 0..%v", c.busyTimeout, MaxBusyTimeout)
	case c.checkpointInterval < 0 || c.checkpointInterval > MaxCheckpointInterval:
		return fmt.Errorf("WithCheckpointInterval: %v is outside 0..%v", c.checkpointInterval, MaxCheckpointInterval)
	case c.clock == nil:
		return fmt.Errorf("WithClock: clock is nil")
	}
	return nil
}

// WithSync sets the durability of a commit. Default SyncFull.
func WithSync(s Sync) Option { return func(c *config) { c.sync = s } }

// WithBatchSize sets how many queued writes the writer commits in one
// transaction. Each write still succeeds or fails on its own. Default 64,
// range 1..1024.
func WithBatchSize(n int) Option { return func(c *config) { c.batchSize = n } }

// WithQueueSize bounds the writes waiting for the writer; a caller that finds
// the queue full waits for room or for its context. Default 1024, range
// 1..65536.
func WithQueueSize(n int) Option { return func(c *config) { c.queueSize = n } }

// WithReaders sets the number of read connections. Reads never wait for the
// writer, only for a free read connection. Default 4, range 1..64.
func WithReaders(n int) Option { return func(c *config) { c.readers = n } }

// WithBusyTimeout bounds how long a connection waits for a lock held by
// another process on the same file; 0 fails at once. Default 5s, range
// 0..10m.
func WithBusyTimeout(d time.Duration) Option { return func(c *config) { c.busyTimeout = d } }

// WithCheckpointInterval sets how often a connection of the store's own
// copies the WAL's new pages into the database file, so that the writer's
// commits do not (the writer still does when the WAL passes about 40 MiB).
// 0 leaves checkpoints to the writer, every 1,000 pages as SQLite does by
// default. Default 1s, range 0..1m.
func WithCheckpointInterval(d time.Duration) Option {
	return func(c *config) { c.checkpointInterval = d }
}

// autocheckpoint is the writer's wal_autocheckpoint.
func (c config) autocheckpoint() int {
	if c.checkpointInterval > 0 {
		return walBackstopPages
	}
	return walCheckpointPages
}

// WithClock replaces the store clock, for tests. The store truncates its
// readings to microseconds and converts them to UTC. Default time.Now.
func WithClock(now func() time.Time) Option { return func(c *config) { c.clock = now } }

// ReadOnly opens an existing store for reading only, for commands that only
// look (list, show): nothing is written to the file, the directory or the
// schema, so it works on a file or directory the process cannot write to,
// and on a store another process is writing. Every write method answers
// ErrReadOnly. The store must exist and have the schema of this build (a
// store written by an older hitch must be opened read-write once, which
// upgrades it).
func ReadOnly() Option { return func(c *config) { c.readOnly = true } }
