package doctor_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch/doctor"
	"github.com/hitch-dev/hitch/internal/pgtest"
	"github.com/hitch-dev/hitch/secret"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/postgres"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/tool/mcp"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// openSQLite opens a store in a directory of the test's own.
func openSQLite(t *testing.T, opts ...sqlite.Option) (*sqlite.Store, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "hitch.db")
	s, err := sqlite.Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

// run runs the doctor and returns the report, checking that it is
// self-consistent.
func run(t *testing.T, cfg doctor.Config) doctor.Report {
	t.Helper()
	r, err := doctor.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	for _, c := range r.Checks {
		if c.Verdict != doctor.OK && c.Fix == "" {
			t.Errorf("check %s is %s without a fix: %s", c.Name, c.Verdict, c.Detail)
		}
	}
	return r
}

// check returns the named check of a report.
func check(t *testing.T, r doctor.Report, name string) doctor.Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q in %+v", name, r.Checks)
	return doctor.Check{}
}

func TestHealthySQLiteIsOK(t *testing.T) {
	t.Parallel()
	s, dir := openSQLite(t)
	r := run(t, doctor.Config{Store: s, Commits: 20})
	if r.Verdict != doctor.OK || r.ExitCode() != 0 {
		t.Fatalf("verdict %s, exit %d: %+v", r.Verdict, r.ExitCode(), r.Checks)
	}
	for _, name := range []string{"store", "schema", "durability", "commits", "clock", "nodes", "disk", "secrets"} {
		check(t, r, name)
	}
	if d := check(t, r, "durability").Detail; !strings.Contains(d, "synchronous=FULL") || !strings.Contains(d, "journal_mode=wal") {
		t.Errorf("durability: %s", d)
	}
	if d := check(t, r, "commits").Detail; !strings.HasPrefix(d, "20 commits: p50 ") {
		t.Errorf("commits: %s", d)
	}
	// The probe's scratch file is gone; the store's own files remain.
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.Contains(e.Name(), "doctor") {
			t.Errorf("scratch file %s left behind", e.Name())
		}
	}
}

func TestSQLiteSynchronousOffWarns(t *testing.T) {
	t.Parallel()
	s, _ := openSQLite(t, sqlite.WithSync(sqlite.SyncOff))
	r := run(t, doctor.Config{Store: s, Commits: 5})
	c := check(t, r, "durability")
	if c.Verdict != doctor.Warning || !strings.Contains(c.Detail, "synchronous=OFF") {
		t.Fatalf("durability: %+v", c)
	}
	if r.Verdict != doctor.Warning || r.ExitCode() != 1 {
		t.Fatalf("verdict %s, exit %d: %+v", r.Verdict, r.ExitCode(), r.Checks)
	}
}

func TestSchemaNewerThanBuildFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "hitch.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.DiagnoseSettings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	// A newer hitch migrated the file.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = " + itoa(d.Build+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = sqlite.Open(context.Background(), path, sqlite.ReadOnly())
	if err == nil {
		t.Fatal("open of a newer store succeeded")
	}
	r := run(t, doctor.Config{StoreErr: err})
	c := check(t, r, "schema")
	if c.Verdict != doctor.Failure || !strings.Contains(c.Detail, "newer than this build") {
		t.Fatalf("schema: %+v", c)
	}
	if r.ExitCode() != 2 {
		t.Fatalf("exit %d, want 2", r.ExitCode())
	}
}

func TestUnopenedStoreFails(t *testing.T) {
	t.Parallel()
	_, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "hitch.db"), sqlite.ReadOnly())
	if err == nil {
		t.Fatal("read-only open of a missing store succeeded")
	}
	r := run(t, doctor.Config{StoreErr: err})
	if c := check(t, r, "store"); c.Verdict != doctor.Failure || !strings.Contains(c.Detail, "no store here") {
		t.Fatalf("store: %+v", c)
	}
}

func TestMissingBwrap(t *testing.T) {
	t.Parallel()
	s, _ := openSQLite(t)
	empty := t.TempDir()
	r := run(t, doctor.Config{Store: s, Commits: 1, Sandbox: &doctor.Sandbox{BwrapDirs: empty}})
	c := check(t, r, "sandbox")
	if c.Verdict != doctor.Warning || !strings.Contains(c.Detail, "unconfined") || r.ExitCode() != 1 {
		t.Fatalf("sandbox: %+v (exit %d)", c, r.ExitCode())
	}
	r = run(t, doctor.Config{Store: s, Commits: 1, Sandbox: &doctor.Sandbox{BwrapDirs: empty, RequireIsolation: true}})
	c = check(t, r, "sandbox")
	if c.Verdict != doctor.Failure || !strings.Contains(c.Detail, "refused") || r.ExitCode() != 2 {
		t.Fatalf("sandbox with require_isolation: %+v (exit %d)", c, r.ExitCode())
	}
}

func TestWorkingBwrapIsOK(t *testing.T) {
	t.Parallel()
	if err := lookBwrap(); err != nil {
		t.Skipf("bwrap is not usable here: %v", err)
	}
	s, _ := openSQLite(t)
	c := check(t, run(t, doctor.Config{Store: s, Commits: 1, Sandbox: &doctor.Sandbox{ReadPaths: []string{"/opt/data"}}}), "sandbox")
	if c.Verdict != doctor.OK || !strings.Contains(c.Detail, "/usr") || !strings.Contains(c.Detail, "/opt/data") {
		t.Fatalf("sandbox: %+v", c)
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestUnreachableMCPServerFailsNamingIt(t *testing.T) {
	t.Parallel()
	s, _ := openSQLite(t)
	srv := mcp.Server{Name: "tickets", URL: "http://" + closedPort(t) + "/mcp", ConnectTimeout: 2 * time.Second}.WithDefaults()
	r := run(t, doctor.Config{Store: s, Commits: 1, MCP: []mcp.Server{srv}})
	c := check(t, r, "mcp tickets")
	if c.Verdict != doctor.Failure || !strings.Contains(c.Detail, "tickets") || !strings.Contains(c.Detail, "unreachable") || r.ExitCode() != 2 {
		t.Fatalf("mcp: %+v (exit %d)", c, r.ExitCode())
	}
}

func TestNoCheckPrintsASecret(t *testing.T) {
	t.Parallel()
	const canary = "canary-7f3a9c2e41d86b05"
	red, err := secret.New(map[string]string{"ticket_token": canary})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := openSQLite(t)
	// The unreachable server's URL carries the secret, as a ${VAR} in a
	// config's url would, and its error names the URL.
	srv := mcp.Server{Name: "tickets", URL: "http://" + closedPort(t) + "/mcp?token=" + canary, ConnectTimeout: 2 * time.Second}.WithDefaults()
	r := run(t, doctor.Config{Store: s, Commits: 1, MCP: []mcp.Server{srv}, Redactor: red,
		Secrets: []doctor.Secret{{Name: "ticket_token"}, {Name: "support/lead", Missing: "APPROVER_KEY is not set"}},
		Models:  []doctor.Model{{Name: "gpt", KeyVar: "OPENAI_API_KEY", KeySet: true}}})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), canary) {
		t.Fatalf("the report holds the secret: %s", b)
	}
	if c := check(t, r, "mcp tickets"); !strings.Contains(c.Detail, "token=") {
		t.Fatalf("the unreachable server's detail lost its URL: %s", c.Detail)
	}
	if c := check(t, r, "secrets"); c.Verdict != doctor.Warning || !strings.Contains(c.Detail, "APPROVER_KEY") {
		t.Fatalf("secrets: %+v", c)
	}
}

func TestModelKeyMissingFails(t *testing.T) {
	t.Parallel()
	s, _ := openSQLite(t)
	r := run(t, doctor.Config{Store: s, Commits: 1, Models: []doctor.Model{{Name: "claude", KeyVar: "ANTHROPIC_API_KEY"}, {Name: "script"}}})
	if c := check(t, r, "model claude"); c.Verdict != doctor.Failure || !strings.Contains(c.Detail, "ANTHROPIC_API_KEY is not set") {
		t.Fatalf("model claude: %+v", c)
	}
	if c := check(t, r, "model script"); c.Verdict != doctor.OK {
		t.Fatalf("model script: %+v", c)
	}
}

// TestNodesCheck: a run held by a live lease names its node; a due run
// with no node to claim it is a warning.
func TestNodesCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		claim   bool
		verdict doctor.Verdict
		detail  string
	}{
		{"live lease shows its node", true, doctor.OK, "node-a (1 runs)"},
		{"due runs without nodes warn", false, doctor.Warning, "1 runs are due"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := openSQLite(t)
			ctx := context.Background()
			if _, _, err := s.RunCreate(ctx, store.RunCreateParams{ID: "r1", Agent: "a", Version: 1, Entries: []store.EntryInput{{Kind: "run.started", Data: json.RawMessage(`{}`)}}}); err != nil {
				t.Fatal(err)
			}
			if tc.claim {
				if _, err := s.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "node-a", TTL: time.Minute, Limit: 1}); err != nil {
					t.Fatal(err)
				}
			}
			c := check(t, run(t, doctor.Config{Store: s, Commits: 1}), "nodes")
			if c.Verdict != tc.verdict || !strings.Contains(c.Detail, tc.detail) {
				t.Fatalf("nodes: %+v", c)
			}
		})
	}
}

func TestBadConfigIsRefused(t *testing.T) {
	t.Parallel()
	if _, err := doctor.Run(context.Background(), doctor.Config{}); err == nil {
		t.Error("a config without a store or its error was accepted")
	}
	s, _ := openSQLite(t)
	if _, err := doctor.Run(context.Background(), doctor.Config{Store: s, Commits: store.MaxDiagnoseCommits + 1}); err == nil {
		t.Error("too many commits were accepted")
	}
}

// openPostgres opens a store in a schema of the test's own, dropped when
// the test ends; a key and value given are added to the URL's query.
func openPostgres(t *testing.T, key, value string) (*postgres.Store, string) {
	t.Helper()
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, "hitch_test_")
	if key != "" {
		url = pgtest.WithParam(url, key, value)
	}
	s, err := postgres.Open(context.Background(), url, postgres.WithSchema(schema), postgres.WithPollOnly(true))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, schema
}

// tables lists the tables of a schema.
func tables(t *testing.T, schema string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = $1", schema)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestHealthyPostgres(t *testing.T) {
	t.Parallel()
	s, schema := openPostgres(t, "", "")
	before := tables(t, schema)
	r := run(t, doctor.Config{Store: s, Commits: 20})
	for _, name := range []string{"store", "schema", "durability", "commits", "clock", "nodes"} {
		if c := check(t, r, name); c.Verdict != doctor.OK {
			t.Errorf("%s: %+v", name, c)
		}
	}
	if d := check(t, r, "durability").Detail; !strings.Contains(d, "synchronous_commit=") || !strings.Contains(d, "wal_level=") {
		t.Errorf("durability: %s", d)
	}
	if after := tables(t, schema); len(after) != len(before) {
		t.Errorf("tables before the probe %v, after %v", before, after)
	}
}

func TestPostgresSynchronousCommitOffWarns(t *testing.T) {
	t.Parallel()
	// Set for the store's sessions, as a role's or a database's setting
	// would be.
	s, _ := openPostgres(t, "synchronous_commit", "off")
	r := run(t, doctor.Config{Store: s, Commits: 5})
	c := check(t, r, "durability")
	if c.Verdict != doctor.Warning || !strings.Contains(c.Detail, "synchronous_commit=off") {
		t.Fatalf("durability: %+v", c)
	}
	if r.ExitCode() != 1 {
		t.Fatalf("exit %d, want 1: %+v", r.ExitCode(), r.Checks)
	}
}
