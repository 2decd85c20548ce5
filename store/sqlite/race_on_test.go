//go:build race

package sqlite

// raceEnabled: the race detector slows SQLite itself (Go code here) many
// times over, so the plan test fills a smaller store.
const raceEnabled = true
