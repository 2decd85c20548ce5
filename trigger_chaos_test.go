package hitch_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the check reads the SQLite file itself

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/internal/testproc"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/postgres"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/triggers"
)

// The trigger chaos test runs three dispatcher processes on one store
// whose clock runs many times faster than the wall clock (every process
// computes it from the same start, so they agree), and SIGKILLs them at
// random, starting a new one each time. Each of its bindings fires every
// minute, a fixed number of times; in a few seconds the store lives
// through hours of schedule. Afterwards every run in the store is read:
// each expected occurrence started exactly one run, no run stands for
// anything else, none was created before its occurrence, and every
// binding counted each fire once.

// triggerChaosEnv is what a child is told.
type triggerChaosEnv struct {
	DB, PG, Schema string
	Base           time.Time
	RealStart      int64 // unix nanoseconds
	Speed          float64
}

func (e triggerChaosEnv) clock() func() time.Time {
	start := time.Unix(0, e.RealStart)
	return func() time.Time {
		return e.Base.Add(time.Duration(float64(time.Since(start)) * e.Speed))
	}
}

func (e triggerChaosEnv) open(ctx context.Context) (store.Store, error) {
	if e.PG != "" {
		return postgres.Open(ctx, e.PG, postgres.WithSchema(e.Schema), postgres.WithClock(e.clock()), postgres.WithMaxConns(4))
	}
	return sqlite.Open(ctx, e.DB, sqlite.WithClock(e.clock()))
}

func init() {
	if v := os.Getenv("HITCH_TRIGGER_CHAOS"); v != "" {
		os.Exit(triggerChaosChild(v))
	}
}

// Timings on the store's clock: a claim of a killed process is given up
// after chaosClaimTTL; an occurrence is on time for a day, so a backlog
// is worked one occurrence at a time rather than folded.
const (
	chaosClaimTTL = 2 * time.Minute
	chaosGrace    = 24 * time.Hour
)

func triggerChaosRuntime(st store.Store, node string) (*hitch.Runtime, error) {
	a, err := tickAgent()
	if err != nil {
		return nil, err
	}
	return hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{a}, Node: node,
		Triggers: triggers.Config{Poll: 2 * time.Millisecond, Batch: 16, ClaimTTL: chaosClaimTTL}})
}

func triggerChaosChild(v string) int {
	var e triggerChaosEnv
	if err := json.Unmarshal([]byte(v), &e); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	st, err := e.open(ctx)
	if err != nil {
		return childFail(err)
	}
	rt, err := triggerChaosRuntime(st, fmt.Sprintf("node-%d", os.Getpid()))
	if err != nil {
		return childFail(err)
	}
	fmt.Println("READY")
	_ = rt.RunTriggers(ctx) // until killed
	return 0
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

var chaosZones = []string{"UTC", "America/New_York", "Europe/Berlin", "Asia/Kolkata", "Australia/Lord_Howe"}

func TestTriggerChaosSQLite(t *testing.T) {
	t.Parallel()
	runTriggerChaos(t, triggerChaosEnv{DB: filepath.Join(t.TempDir(), "hitch.db")})
}

func TestTriggerChaosPostgres(t *testing.T) {
	t.Parallel()
	url := os.Getenv("HITCH_TEST_POSTGRES")
	if url == "" {
		t.Skip("HITCH_TEST_POSTGRES is not set")
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "hitch_trigchaos_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, url); err == nil {
			_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
			conn.Close(ctx)
		}
	})
	runTriggerChaos(t, triggerChaosEnv{PG: url, Schema: schema})
}

// runTriggerChaos: HITCH_TRIGGER_CHAOS_BINDINGS × HITCH_TRIGGER_CHAOS_FIRES
// occurrences (default 20 × 100 = 2,000, 10 × 30 with -short or -race;
// the figure in docs/triggers.md is 20 × 500 = 10,000).
func runTriggerChaos(t *testing.T, e triggerChaosEnv) {
	bindings, fires := 20, 100
	if testing.Short() || raceEnabled {
		bindings, fires = 10, 30
	}
	bindings, fires = envInt("HITCH_TRIGGER_CHAOS_BINDINGS", bindings), envInt("HITCH_TRIGGER_CHAOS_FIRES", fires)
	// Across the spring-forward change of New York (07:00Z) and of no
	// other zone: each binding still fires every minute of UTC.
	e.Base = time.Date(2027, 3, 14, 5, 0, 30, 0, time.UTC)
	e.RealStart = time.Now().UnixNano()
	e.Speed = 500 // a minute of schedule in 120ms; the grace lasts 172s
	ctx := t.Context()

	st, err := e.open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rt, err := triggerChaosRuntime(st, "parent")
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	first := map[string]time.Time{}
	for i := range bindings {
		id := fmt.Sprintf("b%02d", i)
		tr, _, err := rt.Triggers().Create(ctx, triggers.Spec{ID: id, Cron: "* * * * *", Zone: chaosZones[i%len(chaosZones)],
			Agent: "tick", Input: id, MaxFires: int64(fires), Grace: chaosGrace}, triggers.Options{})
		if err != nil {
			t.Fatal(err)
		}
		first[id] = tr.NextFire
	}

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	envJSON, _ := json.Marshal(e)
	var (
		procs [3]*exec.Cmd
		kills int
	)
	start := func(i int) {
		cmd := exec.Command(exe, "-test.run=^$")
		testproc.DieWithParent(cmd)
		cmd.Env = append(os.Environ(), "HITCH_TRIGGER_CHAOS="+string(envJSON))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ready := bufio.NewScanner(out)
		if !ready.Scan() || ready.Text() != "READY" {
			_ = cmd.Wait()
			t.Fatalf("child did not start: %s", stderr.String())
		}
		go func() { _, _ = io.Copy(io.Discard, out) }()
		procs[i] = cmd
	}
	for i := range procs {
		start(i)
	}
	defer func() {
		for _, p := range procs {
			if p != nil {
				_ = p.Process.Kill()
				_ = p.Wait()
			}
		}
	}()

	// Kill at random until every binding is done; a kill waits for some
	// progress since the last, so a slow machine (or a race-detector
	// build) is slowed down, not starved. Bounded: a minute without
	// progress, or ten in all, fails.
	deadline, stalled := time.Now().Add(10*time.Minute), time.Now().Add(time.Minute)
	fired := func() (sum int64, done int) {
		trs, err := rt.Triggers().List(ctx, triggers.ListOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range trs {
			sum += tr.FireCount
			if tr.State == "done" {
				done++
			}
		}
		return sum, done
	}
	var atKill, last int64
	for {
		sum, done := fired()
		if done == bindings {
			break
		}
		if sum > last {
			last, stalled = sum, time.Now().Add(time.Minute)
		}
		if time.Now().After(deadline) || time.Now().After(stalled) {
			t.Fatalf("%d of %d bindings done, %d fires, when the bound ran out (%d kills)", done, bindings, sum, kills)
		}
		timer := time.NewTimer(time.Duration(100+mrand.IntN(400)) * time.Millisecond)
		<-timer.C
		if sum == atKill {
			continue
		}
		atKill = sum
		i := mrand.IntN(len(procs))
		_ = procs[i].Process.Kill() // SIGKILL
		_ = procs[i].Wait()
		kills++
		start(i)
	}

	// Every binding counted each fire once and nothing missed.
	for id, f := range first {
		tr, err := rt.Triggers().Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		last := f.Add(time.Duration(fires-1) * time.Minute)
		if tr.FireCount != int64(fires) || tr.MissedCount != 0 || !tr.LastFire.Equal(last) {
			t.Errorf("%s: fired %d, missed %d, last %v; want %d, 0, %v", id, tr.FireCount, tr.MissedCount, tr.LastFire, fires, last)
		}
	}
	// Every run in the store is an expected occurrence, once, not early.
	runs := readRuns(t, e)
	want := map[string]time.Time{}
	for id, f := range first {
		for k := range fires {
			occ := f.Add(time.Duration(k) * time.Minute)
			want[triggers.OccurrenceID(id, occ)] = occ
		}
	}
	for id, created := range runs {
		occ, ok := want[id]
		if !ok {
			t.Errorf("run %s stands for no occurrence", id)
			continue
		}
		if created.Before(occ) {
			t.Errorf("run %s created at %v, before its occurrence", id, created)
		}
	}
	missing := 0
	for id := range want {
		if _, ok := runs[id]; !ok {
			missing++
		}
	}
	if missing > 0 || len(runs) != len(want) {
		t.Errorf("%d runs for %d occurrences, %d missing", len(runs), len(want), missing)
	}
	t.Logf("%d occurrences of %d bindings dispatched exactly once across 3 processes and %d SIGKILLs; schedule from %v to %v",
		len(want), bindings, kills, e.Base, e.Base.Add(time.Duration(fires)*time.Minute))
}

// readRuns reads every run's id and creation time from the store's own
// tables: the Store interface pages runs by status only.
func readRuns(t *testing.T, e triggerChaosEnv) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	ctx := t.Context()
	if e.PG != "" {
		conn, err := pgx.Connect(ctx, e.PG)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, "SELECT id, created_at FROM "+pgx.Identifier{e.Schema, "hitch_runs"}.Sanitize())
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var at time.Time
			if err := rows.Scan(&id, &at); err != nil {
				t.Fatal(err)
			}
			out[id] = at.UTC()
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	db, err := sql.Open("sqlite", "file:"+e.DB+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT id, created_at FROM runs")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var at int64
		if err := rows.Scan(&id, &at); err != nil {
			t.Fatal(err)
		}
		out[id] = time.UnixMicro(at).UTC()
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
