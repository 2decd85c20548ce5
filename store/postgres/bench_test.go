package postgres_test

import (
	"fmt"
	"testing"

	"github.com/hitch-dev/hitch/store/postgres"
	"github.com/hitch-dev/hitch/store/storetest"
)

// BenchmarkAppend measures hitch's write path on PostgreSQL: JournalAppend
// of two entries under a lease, one fenced statement per call. One op is one
// append call; each runner appends to its own run, as runners do (see
// storetest.BenchAppend, which the SQLite benchmark runs too).
func BenchmarkAppend(b *testing.B) {
	for _, runners := range []int{1, 64} {
		for _, conns := range []int{4, 16} {
			b.Run(fmt.Sprintf("runners=%d/conns=%d", runners, conns), func(b *testing.B) {
				s := open(b, postgres.WithMaxConns(conns))
				defer s.Close()
				storetest.BenchAppend(b, s, runners)
			})
		}
	}
}
