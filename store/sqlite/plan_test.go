package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/storetest"
)

// TestConformance runs the conformance suite on a clock the suite drives,
// so lease expiry and wake times are reached without waiting.
//
// It then checks that no statement the store runs reads the whole of runs
// or the journal. The statements are not listed by hand: the suite runs on
// a driver that records every statement prepared or executed, and so does
// each optional interface the store implements. Each recorded statement
// is then explained on a store of 100,000 runs (mixed statuses, families
// and tenants, each run with a journal; fewer under the race detector).
func TestConformance(t *testing.T) {
	t.Parallel()
	rec := recordingDriver(t)
	t.Run("suite", func(t *testing.T) {
		storetest.RunWithClock(t, func(t *testing.T, now func() time.Time) store.Store {
			return openT(t, filepath.Join(t.TempDir(), "hitch.db"), WithClock(now), withDriver(rec.name))
		})
	})
	if testing.Short() {
		t.Skip("the query plans need a store of 100,000 runs")
	}
	t.Run("plans", func(t *testing.T) { checkPlans(t, rec) })
}

func checkPlans(t *testing.T, rec *recorder) {
	path := filepath.Join(t.TempDir(), "plans.db")
	s := openT(t, path, withDriver(rec.name))
	ctx := t.Context()
	stmts := rec.Sorted()
	// Without statistics (the store never runs ANALYZE) SQLite's planner
	// does not look at how many rows a table holds, so the smaller store
	// filled under the race detector gets the same plans.
	n := 100_000
	if raceEnabled {
		n = 5_000
	}
	fillRuns(t, s, n)

	plans := map[string][]step{}
	storetest.CheckPlans(t, stmts, storetest.PlanCheck{
		Hot: touchesRuns.MatchString,
		Explain: func(q string) (string, error) {
			plan, err := explain(ctx, s.rdb, q)
			plans[q] = plan
			return indent(planText(plan)), err
		},
		FullScan: func(q, _ string) string { return fullScans(q, plans[q]) },
		Want: []string{"UPDATE runs SET status = 'running'", "INSERT INTO journal", "FROM run_counts",
			"SELECT count(*) FROM (SELECT 1 FROM runs", "WHERE parent_id = +?2", "FROM runs WHERE id = ?",
			"ORDER BY created_at DESC, id DESC LIMIT", "AND cancel_requested = 1 AND status IN"},
	})
}

// withDriver opens the store on another database/sql driver.
func withDriver(name string) Option { return func(c *config) { c.driver = name } }

// recorder is a database/sql driver that wraps the store's and records the
// text of every statement it is given.
type recorder struct {
	name  string
	inner driver.Driver
	storetest.Statements
}

var recorders sync.Map // name → *recorder; sql.Register panics on a name used twice

func recordingDriver(t *testing.T) *recorder {
	t.Helper()
	db, err := sql.Open(driverName, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	inner := db.Driver()
	db.Close()
	r := &recorder{name: fmt.Sprintf("recorded-%s-%d", driverName, time.Now().UnixNano()), inner: inner}
	recorders.Store(r.name, r)
	sql.Register(r.name, r)
	return r
}

func (r *recorder) Open(name string) (driver.Conn, error) {
	c, err := r.inner.Open(name)
	if err != nil {
		return nil, err
	}
	return &recConn{Conn: c, r: r}, nil
}

type recConn struct {
	driver.Conn
	r *recorder
}

func (c *recConn) Prepare(q string) (driver.Stmt, error) {
	c.r.Add(q)
	return c.Conn.Prepare(q)
}

func (c *recConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	c.r.Add(q)
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, q)
	}
	return c.Conn.Prepare(q)
}

func (c *recConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	return nil, errors.New("recording driver: the wrapped connection cannot begin a transaction with options")
}

func (c *recConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	c.r.Add(q)
	return e.ExecContext(ctx, q, args)
}

func (c *recConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	e, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	c.r.Add(q)
	return e.QueryContext(ctx, q, args)
}

func (c *recConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

// touchesRuns matches a statement that reads or writes runs or the journal
// (not session_journal).
var touchesRuns = regexp.MustCompile(`(?i)\b(runs|journal)\b`)

// step is one line of a query plan.
type step struct {
	id, parent int
	detail     string
}

// explain returns the plan of q with every parameter NULL.
func explain(ctx context.Context, db *sql.DB, q string) ([]step, error) {
	n := 0 // parameters: the highest ?N, or the count of bare ?s
	for _, m := range param.FindAllStringSubmatch(q, -1) {
		if m[1] == "" {
			n++
		} else if i, _ := strconv.Atoi(m[1]); i > n {
			n = i
		}
	}
	rows, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, make([]any, n)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var plan []step
	for rows.Next() {
		var st step
		var notused int
		if err := rows.Scan(&st.id, &st.parent, &notused, &st.detail); err != nil {
			return nil, err
		}
		plan = append(plan, st)
	}
	return plan, rows.Err()
}

func planText(plan []step) string {
	lines := make([]string, len(plan))
	for i, st := range plan {
		lines[i] = st.detail
	}
	return strings.Join(lines, "\n")
}

var param = regexp.MustCompile(`\?(\d*)`)

// aliasOf finds the names a statement gives runs and the journal.
var aliasOf = regexp.MustCompile(`(?i)\b(?:FROM|JOIN|UPDATE|INTO)\s+(runs|journal)(?:\s+(?:AS\s+)?([a-z]\w*))?`)

// access matches a step that reads a table: SCAN or SEARCH, the table, and
// the index's constraints.
var access = regexp.MustCompile(`^(SCAN|SEARCH) (\w+)(?: USING (?:COVERING )?INDEX (\w+)| USING (?:INTEGER )?PRIMARY KEY)?(?: \((.*)\))?`)

// keyColumns are the columns whose equality selects a run, a family or a
// journal: a step constrained on one reads only what belongs to it.
var keyColumns = []string{"id", "seq", "rowid", "run_seq", "root_id", "parent_id"}

// workIndexes are partial indexes that hold only the runs that are due,
// settled or have a cancel pending: what they hold is the work at hand,
// not the table.
var workIndexes = []string{"runs_lease_due", "runs_wake_due", "runs_settled_roots", "runs_cancel_pending"}

// fullScans names the first step of plan that reads runs or the journal in
// a way that grows with the table, or "". A step that reads by a key
// (a run, a family, a journal) or from a partial index of due or settled
// runs is bounded by what it selects. Any other read of runs is a walk: it
// is allowed only where it is ordered as the statement wants and stopped
// by a LIMIT (no sort of what it read under the same parent). How far such
// a walk goes before the LIMIT is filled depends on the filters it checks
// row by row, which is why each list filter has an index of its own; the
// text filter has none, as store.RunListParams.Text documents.
func fullScans(q string, plan []step) string {
	names := map[string]bool{}
	for _, m := range aliasOf.FindAllStringSubmatch(q, -1) {
		names[strings.ToLower(m[1])] = true
		if m[2] != "" && !isKeyword(m[2]) {
			names[strings.ToLower(m[2])] = true
		}
	}
	limited := regexp.MustCompile(`(?i)\bLIMIT \?\d*\)?\s*$|\bLIMIT \?\d*\)`).MatchString(storetest.OneLine(q))
	for _, st := range plan {
		m := access.FindStringSubmatch(st.detail)
		if m == nil || !names[strings.ToLower(m[2])] {
			continue
		}
		if m[1] == "SEARCH" && (slices.Contains(workIndexes, m[3]) || keyed(m[4])) {
			continue
		}
		sorted := slices.ContainsFunc(plan, func(o step) bool {
			return o.parent == st.parent && strings.HasPrefix(o.detail, "USE TEMP B-TREE")
		})
		if limited && !sorted {
			continue
		}
		return st.detail
	}
	return ""
}

// keyed reports constraints that include equality on a key column.
func keyed(constraints string) bool {
	for c := range strings.SplitSeq(constraints, " AND ") {
		col, _, ok := strings.Cut(c, "=")
		if ok && slices.Contains(keyColumns, strings.TrimSpace(col)) {
			return true
		}
	}
	return false
}

func isKeyword(w string) bool {
	switch strings.ToUpper(w) {
	case "WHERE", "SET", "ON", "JOIN", "LEFT", "ORDER", "GROUP", "LIMIT", "VALUES", "SELECT", "USING", "INNER", "CROSS", "UNION":
		return true
	}
	return false
}

func indent(s string) string { return "      " + strings.ReplaceAll(s, "\n", "\n      ") }

// fillRuns writes n runs behind the store's back, in families of five (a
// root and four children) spread over ten tenants and twenty agents, most
// of them settled, some waiting, queued or running; each run has a journal
// of three entries.
func fillRuns(t *testing.T, s *Store, n int) {
	t.Helper()
	start := time.Now()
	ctx := context.Background()
	now := time.Now().UnixMicro()
	err := s.write(ctx, func(*wtx) error {
		_, err := s.wconn.ExecContext(ctx, `
WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?1)
INSERT INTO runs (id, root_id, parent_id, depth, agent, version, input_hash, status, position,
	lease_owner, lease_token, lease_expires, wake_at, created_at, updated_at, tenant, title)
SELECT printf('r%07d', i), printf('r%07d', i - (i - 1) % 5),
	CASE WHEN (i - 1) % 5 = 0 THEN '' ELSE printf('r%07d', i - (i - 1) % 5) END,
	CASE WHEN (i - 1) % 5 = 0 THEN 0 ELSE 1 END,
	printf('agent%d', i % 20), 1, 'h',
	CASE WHEN i % 50 = 0 THEN 'queued' WHEN i % 50 = 1 THEN 'running' WHEN i % 10 = 2 THEN 'waiting'
		WHEN i % 10 = 3 THEN 'failed' WHEN i % 10 = 4 THEN 'cancelled' ELSE 'completed' END,
	3, CASE WHEN i % 50 = 1 THEN 'node' ELSE '' END, 1,
	CASE WHEN i % 50 = 1 THEN ?2 + 30000000 ELSE 0 END,
	CASE WHEN i % 10 = 2 THEN ?2 + 3600000000 ELSE 0 END,
	?2 - (?1 - i) * 1000, ?2 - (?1 - i) * 1000 + 500,
	printf('tenant%d', ((i - 1) / 5) % 10), printf('input %d', i)
FROM k`, n, now)
		if err != nil {
			return fmt.Errorf("fill runs: %w", err)
		}
		_, err = s.wconn.ExecContext(ctx, `
INSERT INTO journal (run_seq, pos, kind, at, data)
SELECT r.seq, p.pos, CASE p.pos WHEN 1 THEN 'run.started' WHEN 2 THEN 'model.reply' ELSE 'run.waiting' END,
	r.created_at, '{}'
FROM runs AS r, (SELECT 1 AS pos UNION ALL SELECT 2 UNION ALL SELECT 3) AS p`)
		if err != nil {
			return fmt.Errorf("fill journal: %w", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("filled %d runs in %v", n, time.Since(start).Round(time.Millisecond))
}
