package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"time"
)

// checkpointer copies the WAL's frames into the database file on a
// connection of its own, every interval in which the writer committed.
// SQLite's own checkpoint runs inside the commit that crosses its
// threshold, so the writer, and every caller queued behind it, would wait
// for the copy and its syncs. The checkpoints are passive: they copy what no
// reader still needs and never wait for a lock, so the writer is never
// held either. The writer keeps SQLite's checkpoint with a higher threshold
// (walBackstopPages) in case this one falls behind.
type checkpointer struct {
	db       *sql.DB // of one connection, made at the first checkpoint
	interval time.Duration
	commits  *atomic.Uint64 // counted by the writer
	stop     chan struct{}
	done     chan struct{}
}

// start runs the checkpointer until halt.
func (c *checkpointer) start() {
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	go c.loop()
}

// halt ends the checkpointer and waits for it; the last checkpoint is
// SQLite's own, when the store's last connection closes.
func (c *checkpointer) halt() {
	close(c.stop)
	<-c.done
}

func (c *checkpointer) loop() {
	defer close(c.done)
	t := time.NewTicker(c.interval)
	defer t.Stop()
	var seen uint64
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		if n := c.commits.Load(); n != seen {
			seen = n
			// A failed checkpoint loses nothing (the frames stay in the
			// WAL) and the next one, or the writer's, copies them.
			_ = c.checkpoint()
		}
	}
}

// checkpoint runs one passive checkpoint.
func (c *checkpointer) checkpoint() error {
	var busy, frames, copied int
	if err := c.db.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}
