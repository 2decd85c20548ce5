package session

import (
	"context"
	"time"

	"github.com/hitch-dev/hitch/internal/startstop"
)

// Sweeper is a background service that moves on, every interval, every
// session that needs it (Service.Recover). A failed pass is tried again at
// the next interval.
type Sweeper struct {
	s     *Service
	every time.Duration
	startstop.Base
	// TestSignals let tests wait on passes instead of sleeping.
	TestSignals struct {
		// Swept gets each pass's error (nil when it had none).
		Swept startstop.Signal[error]
	}
}

// NewSweeper returns a stopped sweeper that passes every interval.
func (s *Service) NewSweeper(every time.Duration) *Sweeper { return &Sweeper{s: s, every: every} }

// Start starts the sweeper's goroutine; its first pass is at once. It does
// nothing on a store without sessions.
func (w *Sweeper) Start(ctx context.Context) error {
	if w.s.cfg.Store == nil {
		return nil
	}
	return w.Base.Start(ctx, w.loop)
}

func (w *Sweeper) loop(ctx context.Context) {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		_, err := w.s.Recover(ctx)
		w.TestSignals.Swept.Signal(err)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
