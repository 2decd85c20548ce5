package hook

import (
	"context"
	"slices"
	"sync"

	"github.com/hitch-dev/hitch/hitchtype"
)

// Decision is what one named hook answered, as the run's journal keeps
// it. A hook that is several hooks (such as a config's chain) reports one
// Decision for each with Record, so the journal says which decided.
type Decision = hitchtype.HookDecision

// Decisions collects the decisions reported during one hook call. It is
// safe for concurrent use.
type Decisions struct {
	mu  sync.Mutex
	all []Decision
}

type decisionsKey struct{}

// WithDecisions returns a context whose hook calls report their
// decisions to the returned Decisions. The runtime uses it around each
// hook call.
func WithDecisions(ctx context.Context) (context.Context, *Decisions) {
	d := &Decisions{}
	return context.WithValue(ctx, decisionsKey{}, d), d
}

// Record reports a decision to the Decisions of ctx, if it has one.
func Record(ctx context.Context, d Decision) {
	if ds, ok := ctx.Value(decisionsKey{}).(*Decisions); ok {
		ds.mu.Lock()
		ds.all = append(ds.all, d)
		ds.mu.Unlock()
	}
}

// All returns the decisions reported so far, in order.
func (d *Decisions) All() []Decision {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.all)
}
