//go:build !unix

package sqlite

import (
	"context"
	"time"
)

// lockOpen does nothing where there is no flock; the opening steps then
// rely on retrying transient errors alone.
func lockOpen(context.Context, string, time.Duration) (func(), error) { return func() {}, nil }
