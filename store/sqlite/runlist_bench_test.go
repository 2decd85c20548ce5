package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/store"
)

// BenchmarkRunListFilters lists the newest page of 50 among 100,000 runs
// of one tenant, by text (a substring match over id, agent and title,
// with no index) and by time window (the list's index), and counts them.
// One run in 1,000 mentions refunds.
func BenchmarkRunListFilters(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "runs.db")
	s, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	_ = s.Close()
	db, err := sql.Open(driverName, path)
	if err != nil {
		b.Fatal(err)
	}
	const n = 100000
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if _, err := db.Exec(`WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?1)
		INSERT INTO runs (id, root_id, agent, version, input_hash, depth, status, position, created_at, updated_at, tenant, title)
		SELECT 'run-' || i, 'run-' || i, 'agent-' || (i % 5), 1, '', 0, 'completed', 1, ?2 + i * 1000000, ?2 + i * 1000000, 'acme',
			'Summarise ticket ' || i || ' about ' || CASE WHEN i % 1000 = 0 THEN 'refunds' ELSE 'shipping' END FROM k`,
		n, base.UnixMicro()); err != nil {
		b.Fatal(err)
	}
	_ = db.Close()
	if s, err = Open(ctx, path); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	mid := base.Add(n / 2 * time.Second)
	for _, c := range []struct {
		name string
		p    store.RunListParams
		want int
	}{
		{"newest", store.RunListParams{Tenant: "acme", Limit: 50}, 50},
		{"text=refunds", store.RunListParams{Tenant: "acme", Limit: 50, Text: "REFUNDS"}, 50},
		{"text=nothing", store.RunListParams{Tenant: "acme", Limit: 50, Text: "nothing like it"}, 0},
		{"window", store.RunListParams{Tenant: "acme", Limit: 50, CreatedAfter: mid, CreatedBefore: mid.Add(time.Hour)}, 50},
		{"window+text", store.RunListParams{Tenant: "acme", Limit: 50, CreatedBefore: mid, Text: "refunds"}, 49},
	} {
		b.Run("list/"+c.name, func(b *testing.B) {
			for b.Loop() {
				if rs, err := s.RunList(ctx, c.p); err != nil || len(rs) != c.want {
					b.Fatal(len(rs), err)
				}
			}
		})
	}
	for _, c := range []struct {
		name string
		p    store.RunListParams
		want int
	}{
		{"tenant", store.RunListParams{Tenant: "acme"}, n},
		{"text=refunds", store.RunListParams{Tenant: "acme", Text: "refunds"}, n / 1000},
	} {
		b.Run("counts/"+c.name, func(b *testing.B) {
			for b.Loop() {
				if m, err := s.RunCountsFor(ctx, c.p); err != nil || m["completed"] != c.want {
					b.Fatal(m, err)
				}
			}
		})
	}
}
