package hitch

import (
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// Outcome is a run's terminal summary.
type Outcome = hitchtype.Outcome

// Usage sums what providers reported; a nil counter means some reply did
// not report it.
type Usage = hitchtype.Usage

// Run is a run as the store holds it (see hitchtype.Run).
type Run = hitchtype.Run

// RunOf turns a store's run row into a Run, decoding its outcome.
func RunOf(r store.Run) (Run, error) { return store.RunOf(r) }
