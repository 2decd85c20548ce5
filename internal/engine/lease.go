package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// errDrained: the runner parked between steps for a graceful stop.
var errDrained = errors.New("runner drained for a graceful stop")

// drain asks the runner to stop before its next model call or tool body,
// letting the ones already started finish and journaling their results.
func (r *runner) drain() { r.drainOnce.Do(func() { close(r.drainCh) }) }

func (r *runner) draining() bool {
	select {
	case <-r.drainCh:
		return true
	default:
		return false
	}
}

// drained journals what is staged and stops the runner; its lease is then
// given back.
func (r *runner) drained() error {
	if err := r.commit(); err != nil {
		return err
	}
	return errDrained
}

// holdsLease reports whether a runner that returned still holds its lease:
// it did not park or end the run (which releases it with the status), did
// not lose it, and was not abandoned by a stop.
func (r *runner) holdsLease() bool {
	return !r.released && !errors.Is(r.err, errFenced) && !errors.Is(r.err, errStopped)
}

// giveBack releases a lease this engine no longer drives, so the run is due
// at once. It is bounded by the renewal period: a lease not given back in
// that time expires on its own.
func (e *Engine) giveBack(l store.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.RenewEvery)
	defer cancel()
	_ = e.release(ctx, l.Run.ID, l.Token)
}

// release gives a held lease back: the run keeps its status and, running,
// is due at once. A lease already taken or released is left alone.
func (e *Engine) release(ctx context.Context, runID string, token int64) error {
	_, err := e.cfg.Store.LeaseRelease(ctx, store.LeaseReleaseParams{RunID: runID, Owner: e.cfg.Owner, Token: token})
	if errors.Is(err, store.ErrFenced) || errors.Is(err, store.ErrEnded) {
		return nil
	}
	return err
}

// How a command leaves the run once applied.
type afterCommand int

const (
	// driveOn drives the run on here when a runner slot is free, and
	// otherwise leaves it due for a runner with one: commands that
	// unblock a run (approve, reconcile, a wake, a completion).
	driveOn afterCommand = iota
	// leaveAsFound records the command and leaves the run as it was
	// before the claim (queued, waiting, or due): commands that unblock
	// nothing (workspace grants) never drive a run.
	leaveAsFound
)

// command applies a command to a run under its lease. It claims the run,
// waiting at most wait for a live runner to let go, and runs apply on a
// runner's goroutine before its first step; apply returns the command's
// answer and the runner's own error. A runner that fails before it could
// apply the command (its journal, agent, budget or workspace) answers with
// its failure, and gives the lease back: a command never waits on a runner
// that will not answer. A command never waits for a runner slot either:
// without one, the run is left as after takes it once the command is
// applied.
func (e *Engine) command(ctx context.Context, runID string, wait time.Duration, after afterCommand, apply func(r *runner) (reply, err error)) error {
	var found store.Run
	if after == leaveAsFound {
		var err error
		if found, err = e.cfg.Store.RunGet(ctx, runID); err != nil {
			return err
		}
	}
	slot := after == driveOn && e.slots.take(1) == 1
	if after == driveOn && !slot {
		e.starved.Store(true) // the sweeper drives it once a slot frees
	}
	lease, err := e.claimForCommand(ctx, runID, wait)
	if err != nil {
		if slot {
			e.giveSlot()
		}
		return err
	}
	replied := make(chan error, 1)
	r, err := e.spawn(lease, func(r *runner) error {
		reply, err := apply(r)
		if err == nil && after == leaveAsFound {
			// Answer once the run is as it was, so the caller's next
			// command finds it so.
			if err = r.leave(found); !errors.Is(err, errLeft) && reply == nil {
				reply = err
			}
		}
		replied <- reply
		return err
	}, slot)
	if err != nil {
		return err
	}
	select {
	case err := <-replied:
		return err
	case <-r.done:
		select {
		case err := <-replied:
			return err
		default:
		}
		if r.err == nil {
			return fmt.Errorf("run %s: the runner stopped before applying the command", runID)
		}
		return fmt.Errorf("run %s: %w", runID, r.err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errLeft: a runner applied its command and left the run to others, as
// it found it or due for a runner with a slot.
var errLeft = errors.New("runner left the run after its command")

// leave ends a command's runner without driving the run: it gives the run
// back in the status found before the claim — queued, or waiting with its
// wake time — or, found running, gives the lease back so the run stays
// due. The journal is as the command left it.
func (r *runner) leave(found store.Run) error {
	p := store.JournalAppendParams{}
	switch {
	case r.st.ended != nil:
		return nil
	case found.Status == hitchtype.StatusQueued:
		p.Status = hitchtype.StatusQueued
	case found.Status == hitchtype.StatusWaiting:
		p.Status, p.WakeAt = hitchtype.StatusWaiting, found.WakeAt
	default:
		return errLeft // the lease is given back: the run stays due
	}
	if err := r.write(p); err != nil {
		return err
	}
	return errLeft
}
