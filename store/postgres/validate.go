package postgres

import (
	"github.com/hitch-dev/hitch/store"
)

// Bounds on what one call may carry, the same as the SQLite driver's. They
// keep every request, and so every transaction and every answer, to a known
// size.
const (
	// MaxNameBytes, MaxEntries, MaxEntryBytes and MaxWriteBytes are the
	// store package's bounds, the same for every driver.
	MaxNameBytes  = store.MaxNameBytes
	MaxEntries    = store.MaxEntries
	MaxEntryBytes = store.MaxEntryBytes
	MaxWriteBytes = store.MaxWriteBytes
	// MaxListLimit bounds RunList and LeaseClaim limits.
	MaxListLimit = store.MaxListLimit
	// MaxReadLimit bounds a JournalRead limit.
	MaxReadLimit = store.MaxReadLimit
	// MaxLeaseTTL bounds a lease's time to live, so that a typo cannot park
	// a run for years.
	MaxLeaseTTL = store.MaxLeaseTTL
)
