// Package retention deletes what a node no longer needs to keep: settled
// families past their retention, and expired session idempotency keys.
// Its Pruner is a background service that prunes while its node leads, and
// answers an operator's prune at any time.
package retention

import (
	"context"
	"fmt"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/startstop"
	"github.com/hitch-dev/hitch/store"
)

// Store is what pruning needs of a store.
type Store interface {
	Now(ctx context.Context) (time.Time, error)
	RunPrune(ctx context.Context, p store.RunPruneParams) (store.RunPruneResult, error)
	SessionKeyPrune(ctx context.Context, limit int) (int, error)
}

// Config configures a Pruner; the runtime fills it from its own Config.
type Config struct {
	Store Store
	// Retention is how long a settled family is kept after its last
	// change; hitchtype.Infinite keeps everything (the service prunes
	// nothing, an explicit prune still does).
	Retention time.Duration
	// Batch bounds the families, and the keys, one transaction deletes.
	Batch int
	// Every is how often the service prunes, and MaxBatches bounds the
	// transactions of one of its passes.
	Every      time.Duration
	MaxBatches int
	// IsLeader says whether this node leads; the service prunes only then.
	IsLeader func() bool
	// OnError, if set, sees a pass's error; the service goes on.
	OnError func(error)
}

// Pruner prunes on demand (Prune) and, once started, every Config.Every
// while its node leads.
type Pruner struct {
	cfg Config
	startstop.Base
	// TestSignals let tests wait on passes instead of sleeping.
	TestSignals struct {
		// Pruned gets each pass's error (nil for a pass that pruned
		// without one).
		Pruned startstop.Signal[error]
		// Skipped gets a pass that pruned nothing because this node does
		// not lead or keeps everything.
		Skipped startstop.Signal[struct{}]
	}
}

// New returns a stopped Pruner.
func New(cfg Config) *Pruner { return &Pruner{cfg: cfg} }

// Prune deletes settled families older than p.OlderThan, in batches of one
// transaction each, then expired session idempotency keys. Zero fields of p
// take the Config's.
func (s *Pruner) Prune(ctx context.Context, p hitchtype.PruneParams) (hitchtype.PruneResult, error) {
	if p.OlderThan == 0 {
		p.OlderThan = s.cfg.Retention
	}
	if p.Batch == 0 {
		p.Batch = s.cfg.Batch
	}
	switch {
	case p.OlderThan < 0:
		return hitchtype.PruneResult{}, fmt.Errorf("prune: older than %s: want more than 0", p.OlderThan)
	case p.Batch < 1 || p.Batch > store.MaxPruneLimit:
		return hitchtype.PruneResult{}, fmt.Errorf("prune: batch %d: want 1 to %d", p.Batch, store.MaxPruneLimit)
	case p.MaxBatches < 0:
		return hitchtype.PruneResult{}, fmt.Errorf("prune: max batches %d: want 0 (no bound) or more", p.MaxBatches)
	}
	now, err := s.cfg.Store.Now(ctx)
	if err != nil {
		return hitchtype.PruneResult{}, fmt.Errorf("prune: read store clock: %w", err)
	}
	res := hitchtype.PruneResult{Before: now.Add(-p.OlderThan)}
	for i := 0; p.MaxBatches == 0 || i < p.MaxBatches; i++ {
		r, err := s.cfg.Store.RunPrune(ctx, store.RunPruneParams{Before: res.Before, Limit: p.Batch, DryRun: p.DryRun})
		if err != nil {
			return res, fmt.Errorf("prune: %w", err)
		}
		res.Roots = append(res.Roots, r.Roots...)
		res.Runs += r.Runs
		if p.DryRun || len(r.Roots) < p.Batch {
			break
		}
	}
	for i := 0; !p.DryRun && (p.MaxBatches == 0 || i < p.MaxBatches); i++ {
		n, err := s.cfg.Store.SessionKeyPrune(ctx, p.Batch)
		if err != nil {
			return res, fmt.Errorf("prune: %w", err)
		}
		res.Keys += n
		if n < p.Batch {
			break
		}
	}
	return res, nil
}

// Start starts pruning every Config.Every while this node leads, at most
// Config.MaxBatches transactions a pass, until ctx ends or Stop.
func (s *Pruner) Start(ctx context.Context) error { return s.Base.Start(ctx, s.loop) }

func (s *Pruner) loop(ctx context.Context) {
	tick := time.NewTicker(s.cfg.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !s.cfg.IsLeader() || s.cfg.Retention == hitchtype.Infinite {
			s.TestSignals.Skipped.Signal(struct{}{})
			continue
		}
		_, err := s.Prune(ctx, hitchtype.PruneParams{MaxBatches: s.cfg.MaxBatches})
		if err != nil && ctx.Err() == nil && s.cfg.OnError != nil {
			s.cfg.OnError(err)
		}
		s.TestSignals.Pruned.Signal(err)
	}
}
