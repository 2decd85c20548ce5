package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch/internal/pgtest"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/storetest"
)

// TestConformance runs the conformance suite on database time.
//
// It then checks that no statement the store runs reads the whole of runs
// or the journal. The statements are not listed by hand: the suite runs on
// stores whose connections record every statement they send, and so does
// each optional interface the store implements. Each recorded statement is
// then explained, as the generic plan PostgreSQL keeps for a prepared
// statement, on a store of 100,000 runs (mixed statuses, families and
// tenants, each with a journal) whose statistics are fresh.
func TestConformance(t *testing.T) {
	pgtest.URL(t) // skips the test without a database
	t.Parallel()
	rec := &recorder{}
	t.Run("suite", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			return openPlanStore(t, withTracer(rec))
		})
	})
	if testing.Short() {
		t.Skip("the query plans need a store of 100,000 runs")
	}
	t.Run("plans", func(t *testing.T) { checkPlans(t, rec) })
}

func checkPlans(t *testing.T, rec *recorder) {
	s := openPlanStore(t, withTracer(rec))
	ctx := t.Context()
	stmts := rec.Sorted()
	fillRuns(t, s, 100_000)

	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	storetest.CheckPlans(t, stmts, storetest.PlanCheck{
		Hot:      touchesRuns,
		Explain:  func(q string) (string, error) { return explain(ctx, conn.Conn(), q) },
		FullScan: fullScans,
		Want: []string{"UPDATE hitch_runs AS r SET status = 'running'", "INSERT INTO hitch_journal",
			"FROM hitch_run_counts", "SELECT count(*) FROM (SELECT 1 FROM hitch_runs",
			"WHERE c.parent_id = r.id", "FROM hitch_runs WHERE id = $1", "ORDER BY created_at DESC, id DESC LIMIT",
			"AND cancel_requested AND status IN"},
	})
}

// withTracer is a test's option: the store's connections report every
// statement to tr.
func withTracer(tr pgx.QueryTracer) Option { return func(c *config) { c.tracer = tr } }

// openPlanStore opens a store in a schema of its own, dropped when the
// test ends, in the database of HITCH_TEST_POSTGRES (t is skipped without
// it).
func openPlanStore(t *testing.T, opts ...Option) *Store {
	t.Helper()
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, "hitch_plan_")
	s, err := Open(t.Context(), url, append([]Option{WithSchema(schema)}, opts...)...)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() }) // before the schema is dropped
	return s
}

// startRuns creates runs, each with one run.started entry.
func startRuns(t *testing.T, s *Store, runs ...store.RunCreateParams) {
	t.Helper()
	for _, r := range runs {
		r.Entries = []store.EntryInput{{Kind: "run.started", Data: json.RawMessage(`{}`)}}
		if _, _, err := s.RunCreate(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
}

// claimToken claims run id for an hour and returns the lease's token.
func claimToken(t *testing.T, s *Store, id string) int64 {
	t.Helper()
	ls, err := s.LeaseClaim(t.Context(), store.LeaseClaimParams{Owner: "me", TTL: time.Hour, RunID: id})
	if err != nil {
		t.Fatal(err)
	}
	return ls[0].Token
}

// recorder is a pgx tracer that records the text of every statement.
// recorder records the statements a store's connections send.
type recorder struct{ storetest.Statements }

func (r *recorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.Add(d.SQL)
	return ctx
}

func (r *recorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// touchesRuns reports a statement that reads or writes runs or the
// journal; a lock is not one.
func touchesRuns(q string) bool {
	return runsTable.MatchString(q) && !strings.Contains(q, "pg_advisory")
}

var runsTable = regexp.MustCompile(`(?i)\bhitch_(runs|journal)\b`)

// explain returns the generic plan of q, with every parameter NULL.
func explain(ctx context.Context, conn *pgx.Conn, q string) (string, error) {
	if _, err := conn.Exec(ctx, "PREPARE plan_check AS "+q); err != nil {
		return "", fmt.Errorf("prepare: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "DEALLOCATE plan_check")
	var n int
	if err := conn.QueryRow(ctx, `SELECT cardinality(parameter_types) FROM pg_prepared_statements WHERE name = 'plan_check'`).Scan(&n); err != nil {
		return "", err
	}
	args := ""
	if n > 0 {
		args = "(" + strings.TrimSuffix(strings.Repeat("NULL, ", n), ", ") + ")"
	}
	rows, err := conn.Query(ctx, "EXPLAIN EXECUTE plan_check"+args, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), err
}

// scanOf matches a plan node that reads a table or an index: its kind,
// its index (if any) and its table.
var scanOf = regexp.MustCompile(`(Seq Scan|Index Only Scan|Index Scan|Bitmap Heap Scan)(?: Backward)?(?: using (\w+))? on (hitch_runs|hitch_journal)\b`)

// keyIndexes select a run, a family or a journal by equality on a key
// (hitch_journal_session_starts: a run's first entry when it works a
// session, which retention asks for by run); workIndexes are partial
// indexes of the runs that are due, settled or have a cancel pending, whose
// size is the work at hand, not the table.
var (
	keyIndexes = []string{"hitch_runs_pkey", "hitch_runs_id_key", "hitch_journal_pkey", "hitch_journal_session_starts",
		"hitch_runs_root", "hitch_runs_parent"}
	workIndexes = []string{"hitch_runs_lease_due", "hitch_runs_wake_due", "hitch_runs_settled_roots", "hitch_runs_cancel_pending"}
)

// fullScans names the first node of plan that reads runs or the journal in
// a way that grows with the table, or "": a sequential scan, or an index
// walk other than by a key or a partial index of due or settled runs that
// is not ordered as the statement wants and stopped by a LIMIT (a Limit
// node above it, no Sort between). How far such a walk goes before the
// LIMIT is filled depends on the filters it checks row by row, which is
// why each list filter has an index of its own; the text filter has none,
// as store.RunListParams.Text documents. A Bitmap Heap Scan is judged by
// its Bitmap Index Scans.
func fullScans(q, plan string) string {
	lines := strings.Split(plan, "\n")
	for i, line := range lines {
		m := scanOf.FindStringSubmatch(line)
		if m == nil {
			if b := regexp.MustCompile(`Bitmap Index Scan on (\w+)`).FindStringSubmatch(line); b != nil &&
				strings.HasPrefix(b[1], "hitch_runs") && !slices.Contains(keyIndexes, b[1]) && !slices.Contains(workIndexes, b[1]) && !limitedAbove(lines, i) {
				return strings.TrimSpace(line)
			}
			continue
		}
		switch {
		case m[1] == "Seq Scan":
			return strings.TrimSpace(line)
		case m[1] == "Bitmap Heap Scan":
			continue
		case slices.Contains(workIndexes, m[2]):
			continue
		case slices.Contains(keyIndexes, m[2]) && hasCond(lines, i):
			continue
		case limitedAbove(lines, i):
			continue
		}
		return strings.TrimSpace(line)
	}
	return ""
}

// hasCond reports an Index Cond under the node at line i.
func hasCond(lines []string, i int) bool {
	depth := indentOf(lines[i])
	for _, l := range lines[i+1:] {
		if strings.Contains(l, "->") && indentOf(l) <= depth {
			return false
		}
		if strings.Contains(l, "Index Cond:") {
			return true
		}
	}
	return false
}

// limitedAbove reports a Limit node above the node at line i with no Sort
// (nor aggregate) between them.
func limitedAbove(lines []string, i int) bool {
	depth := indentOf(lines[i])
	for j := i - 1; j >= 0; j-- {
		l := lines[j]
		if !strings.Contains(l, "->") && j > 0 {
			continue
		}
		if d := indentOf(l); d < depth || j == 0 {
			depth = d
			node := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "->"))
			switch {
			case strings.HasPrefix(node, "Limit"):
				return true
			case strings.HasPrefix(node, "Sort"), strings.HasPrefix(node, "Incremental Sort"),
				strings.HasPrefix(node, "Aggregate"), strings.HasPrefix(node, "HashAggregate"),
				strings.HasPrefix(node, "GroupAggregate"), strings.HasPrefix(node, "Hash"):
				return false
			}
		}
	}
	return false
}

func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

// fillRuns writes n runs behind the store's back, in families of five (a
// root and four children) spread over ten tenants and twenty agents, most
// of them settled, some waiting, queued or running; each run has a journal
// of three entries. The statistics are then brought up to date, as
// autovacuum would.
func fillRuns(t *testing.T, s *Store, n int) {
	t.Helper()
	ctx := t.Context()
	start := time.Now()
	for _, q := range []string{`
INSERT INTO hitch_runs (id, root_id, parent_id, depth, agent, version, input_hash, status, position,
	lease_owner, lease_token, lease_expires, wake_at, created_at, updated_at, tenant, title)
SELECT format('r%s', lpad(i::text, 7, '0')), format('r%s', lpad((i - (i - 1) % 5)::text, 7, '0')),
	CASE WHEN (i - 1) % 5 = 0 THEN '' ELSE format('r%s', lpad((i - (i - 1) % 5)::text, 7, '0')) END,
	CASE WHEN (i - 1) % 5 = 0 THEN 0 ELSE 1 END,
	format('agent%s', i % 20), 1, 'h',
	CASE WHEN i % 50 = 0 THEN 'queued' WHEN i % 50 = 1 THEN 'running' WHEN i % 10 = 2 THEN 'waiting'
		WHEN i % 10 = 3 THEN 'failed' WHEN i % 10 = 4 THEN 'cancelled' ELSE 'completed' END,
	3, CASE WHEN i % 50 = 1 THEN 'node' ELSE '' END, 1,
	CASE WHEN i % 50 = 1 THEN now() + interval '30 seconds' END,
	CASE WHEN i % 10 = 2 THEN now() + interval '1 hour' END,
	now() - ($1 - i) * interval '1 millisecond', now() - ($1 - i) * interval '1 millisecond' + interval '500 microseconds',
	format('tenant%s', ((i - 1) / 5) % 10), format('input %s', i)
FROM generate_series(1, $1::int) AS i`, `
INSERT INTO hitch_journal (run_seq, pos, kind, at, data)
SELECT r.seq, p.pos, CASE p.pos WHEN 1 THEN 'run.started' WHEN 2 THEN 'model.reply' ELSE 'run.waiting' END,
	r.created_at, '{}'
FROM hitch_runs AS r, generate_series(1, 3) AS p (pos)`,
		`ANALYZE hitch_runs`, `ANALYZE hitch_journal`,
	} {
		var args []any
		if strings.Contains(q, "$1") {
			args = append(args, n)
		}
		if _, err := s.pool.Exec(ctx, q, args...); err != nil {
			t.Fatalf("fill: %v", err)
		}
	}
	t.Logf("filled %d runs in %v", n, time.Since(start).Round(time.Millisecond))
}
