// Package follow lets many readers follow one run's journal at the cost of
// one: a Hub keeps one feed a followed run, which reads each new commit of
// the run's journal from the store once and hands its entries to every
// follower of the run, each through a bounded buffer of its own.
//
// A feed reads when this process commits to the run (Notify), and every
// poll interval, for commits made by other processes. A follower that lets
// its buffer fill is cut (ErrBehind) rather than allowed to hold the
// others back or to grow without bound; it may follow again from the last
// entry it took, and loses nothing.
package follow

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/startstop"
	"github.com/hitch-dev/hitch/store"
)

// ErrBehind ends a follower that fell a whole buffer behind its run's
// journal. Following again from its last entry resumes without a gap.
var ErrBehind = errors.New("follower fell behind")

// ErrStopped ends the followers of a hub that stopped.
var ErrStopped = errors.New("following stopped")

// Reader is what a hub reads: a run's journal after a position.
type Reader interface {
	JournalRead(ctx context.Context, p store.JournalReadParams) ([]store.Entry, error)
}

// Config configures a Hub.
type Config struct {
	// Store is read once a commit for all the followers of a run.
	Store Reader
	// Buffer is how many entries a follower may hold unread before it is
	// cut with ErrBehind.
	Buffer int
	// Poll is how often a feed reads its run's journal without a Notify:
	// the bound on how late a commit from another process is seen.
	Poll time.Duration
	// Page is how many entries one read returns at most.
	Page int
}

// Hub is the service that runs the feeds. Start it before Follow; Stop
// ends every feed and its followers (ErrStopped) and waits for the feeds'
// goroutines.
type Hub struct {
	startstop.Base
	cfg Config

	mu      sync.Mutex
	ctx     context.Context // the running loop's; nil when stopped
	feeds   map[string]*feed
	wg      sync.WaitGroup
	testing hubSignals
}

type hubSignals struct {
	// read: a feed read the store (the run's id).
	read startstop.Signal[string]
}

// feed is one followed run: its reader's position and its followers. Its
// fields are guarded by the hub's mutex.
type feed struct {
	id   string
	pos  int64 // the last entry read and handed out
	subs map[*sub]struct{}
	wake chan struct{}
}

// sub is one follower's buffer. The feed closes ch when it ends the
// follower, having set err first (nil: the run ended).
type sub struct {
	ch  chan store.Entry
	err error
}

// New returns a stopped hub.
func New(cfg Config) *Hub {
	cfg.Buffer = max(cfg.Buffer, 1)
	// A follower that keeps up has room for a whole page.
	cfg.Page = min(max(cfg.Page, 1), cfg.Buffer)
	return &Hub{cfg: cfg, feeds: map[string]*feed{}}
}

// Start starts the hub: Follow works until ctx ends or Stop is called.
func (h *Hub) Start(ctx context.Context) error {
	ready := make(chan struct{})
	err := h.Base.Start(ctx, func(ctx context.Context) {
		h.mu.Lock()
		h.ctx = ctx
		h.mu.Unlock()
		close(ready)
		<-ctx.Done()
		h.mu.Lock()
		h.ctx = nil
		h.mu.Unlock()
		h.wg.Wait() // each feed sees ctx end and ends its followers
	})
	if err == nil {
		<-ready
	}
	return err
}

// Notify says that this process committed to runID's journal, so its feed
// (if it is followed) reads at once. It never blocks.
func (h *Hub) Notify(runID string) {
	h.mu.Lock()
	f := h.feeds[runID]
	h.mu.Unlock()
	if f != nil {
		poke(f.wake)
	}
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Follow yields runID's journal entries after position after, in order and
// each once, as they are committed, until the run's terminal entry was
// yielded. length is the journal's length as the caller saw it: a feed
// never starts past it, so that entries a follower asked to skip are not
// skipped for the followers that join later. Entries the run's feed had already read when the follower
// joined are read from the store for it alone; later ones come from the
// feed. It ends with ErrBehind when the caller took too long to take what
// the feed handed it, with ErrStopped when the hub stops, with ctx's error,
// or with the store's.
func (h *Hub) Follow(ctx context.Context, runID string, after, length int64) iter.Seq2[store.Entry, error] {
	return func(yield func(store.Entry, error) bool) {
		s, joined, err := h.join(runID, min(after, length))
		if err != nil {
			yield(store.Entry{}, err)
			return
		}
		defer h.leave(runID, s)
		// What the feed had handed out before this follower joined.
		for after < joined {
			es, err := h.cfg.Store.JournalRead(ctx, store.JournalReadParams{RunID: runID, After: after, Limit: int(min(int64(h.cfg.Page), joined-after))})
			if err != nil {
				yield(store.Entry{}, fmt.Errorf("follow %s: %w", runID, err))
				return
			}
			if len(es) == 0 {
				break
			}
			for _, e := range es {
				after = e.Pos
				if !yield(e, nil) {
					return
				}
				if e.Kind == hitchtype.KindRunEnded {
					return
				}
			}
		}
		for {
			select {
			case e, ok := <-s.ch:
				if !ok {
					if s.err != nil {
						yield(store.Entry{}, fmt.Errorf("follow %s after %d: %w", runID, after, s.err))
					}
					return
				}
				if e.Pos <= after {
					continue // the follower asked to start past the feed
				}
				after = e.Pos
				if !yield(e, nil) {
					return
				}
				if e.Kind == hitchtype.KindRunEnded {
					return
				}
			case <-ctx.Done():
				yield(store.Entry{}, fmt.Errorf("follow %s: %w", runID, ctx.Err()))
				return
			}
		}
	}
}

// join adds a follower to runID's feed, starting the feed at from when
// the run has none, and returns the position the feed had reached.
func (h *Hub) join(runID string, from int64) (*sub, int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ctx == nil {
		return nil, 0, ErrStopped
	}
	f := h.feeds[runID]
	if f == nil {
		f = &feed{id: runID, pos: from, subs: map[*sub]struct{}{}, wake: make(chan struct{}, 1)}
		h.feeds[runID] = f
		h.wg.Add(1)
		go h.run(h.ctx, f)
		poke(f.wake) // its first read: what is there already
	}
	s := &sub{ch: make(chan store.Entry, h.cfg.Buffer)}
	f.subs[s] = struct{}{}
	return s, f.pos, nil
}

// leave removes a follower; its feed ends when it was the last.
func (h *Hub) leave(runID string, s *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.feeds[runID]
	if f == nil {
		return
	}
	if _, ok := f.subs[s]; ok {
		delete(f.subs, s)
		if len(f.subs) == 0 {
			poke(f.wake)
		}
	}
}

// run is a feed's goroutine: it reads the run's journal when woken or
// polled and hands each entry to every follower, until the run's terminal
// entry, the last follower leaving, a store error or the hub's stop.
func (h *Hub) run(ctx context.Context, f *feed) {
	defer h.wg.Done()
	poll := time.NewTicker(h.cfg.Poll)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			h.end(f, ErrStopped)
			return
		case <-f.wake:
		case <-poll.C:
		}
		if h.idle(f) {
			return
		}
		for {
			h.mu.Lock()
			pos := f.pos
			h.mu.Unlock()
			es, err := h.cfg.Store.JournalRead(ctx, store.JournalReadParams{RunID: f.id, After: pos, Limit: h.cfg.Page})
			h.testing.read.Signal(f.id)
			if err != nil {
				if ctx.Err() != nil {
					err = ErrStopped
				}
				h.end(f, err)
				return
			}
			if ended := h.hand(f, es); ended {
				h.end(f, nil)
				return
			}
			if len(es) < h.cfg.Page {
				break
			}
		}
	}
}

// hand gives entries to every follower of f, cutting those whose buffer is
// full, and reports whether the run's terminal entry was among them.
func (h *Hub) hand(f *feed, es []store.Entry) (ended bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range es {
		for s := range f.subs {
			select {
			case s.ch <- e:
			default:
				s.err = fmt.Errorf("%w: %d entries unread", ErrBehind, cap(s.ch))
				close(s.ch)
				delete(f.subs, s)
			}
		}
		f.pos = e.Pos
		if e.Kind == hitchtype.KindRunEnded {
			ended = true
		}
	}
	return ended
}

// idle removes f when nobody follows it any more, and says so.
func (h *Hub) idle(f *feed) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(f.subs) > 0 {
		return false
	}
	delete(h.feeds, f.id)
	return true
}

// end removes f and ends its followers with err (nil: the run ended, and
// each has its terminal entry in its buffer).
func (h *Hub) end(f *feed, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.feeds[f.id] == f {
		delete(h.feeds, f.id)
	}
	for s := range f.subs {
		s.err = err
		close(s.ch)
		delete(f.subs, s)
	}
}
