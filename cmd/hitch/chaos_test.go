package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch/chaos"
	"github.com/hitch-dev/hitch/internal/testproc"
)

// chaosArgs is the workload the tests run: the command's defaults (300
// runs, 20 faults), a fixed seed, and a bound well inside the test's.
var chaosArgs = []string{"chaos", "--runs", "300", "--kills", "20", "--seed", "9", "--duration", "150s", "--json"}

// runChaos runs bin with args in dir and decodes its JSON result.
func runChaos(t *testing.T, bin, dir string, args ...string) (int, chaos.Result, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	testproc.DieWithParent(cmd)
	cmd.Dir = dir
	var errOut strings.Builder
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	code := exitCode(t, err)
	var res chaos.Result
	if code == exitOK || code == exitViolation {
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("exit %d, output not one JSON result: %v\n%s\n%s", code, err, out, errOut.String())
		}
	}
	return code, res, errOut.String()
}

// checkPassed checks a workload that must keep every promise.
func checkPassed(t *testing.T, code int, res chaos.Result, errOut string) {
	t.Helper()
	if code != exitOK || !res.Report.OK() {
		t.Fatalf("exit %d, violations %v\n%+v\n%s", code, res.Report.Counts, res.Report.Violations, errOut)
	}
	if res.Report.Completed != 300 || res.Kills+res.Pauses+res.Cuts != 20 || res.Seed != 9 {
		t.Errorf("result: %d completed, %d kills, %d pauses, %d cuts, seed %d", res.Report.Completed, res.Kills, res.Pauses, res.Cuts, res.Seed)
	}
	t.Logf("%s: %d SIGKILL, %d SIGSTOP, %d cuts (%d connections), %d effects, %d uncertain calls reconciled, drained in %s, %s in all",
		res.Driver, res.Kills, res.Pauses, res.Cuts, res.CutBackends, res.Report.Effects, res.Reconciled, res.Drain, res.Elapsed)
}

// TestChaosSQLite: hitch chaos --runs 300 --kills 20 keeps every promise
// on SQLite, in a scratch file beside the store that it drops, and never
// touches the store itself.
func TestChaosSQLite(t *testing.T) {
	testproc.Heavy(t, "starts, kills and pauses worker processes")
	dir := t.TempDir()
	code, res, errOut := runChaos(t, binary(t), dir, append(chaosArgs, "--db", filepath.Join(dir, "real.db"))...)
	checkPassed(t, code, res, errOut)
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left in the store's folder: %v", left)
	}
}

// TestChaosPostgres: the same on PostgreSQL, with connection cuts, in a
// scratch schema that it drops.
func TestChaosPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts, kills and pauses worker processes")
	}
	url := os.Getenv("HITCH_TEST_POSTGRES")
	if url == "" {
		t.Skip("HITCH_TEST_POSTGRES is not set: set it to a postgres:// URL of a database the tests may create schemas in")
	}
	t.Parallel()
	code, res, errOut := runChaos(t, binary(t), t.TempDir(), append(chaosArgs, "--db", url, "--cuts")...)
	checkPassed(t, code, res, errOut)
	ns := res.Namespace
	if res.Cuts == 0 || res.CutsRefused != "" {
		t.Errorf("no connection cut: %d cuts, refused: %q", res.Cuts, res.CutsRefused)
	}
	ctx := context.Background()
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	var exists bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, ns).Scan(&exists); err != nil || exists {
		t.Errorf("scratch schema %s left behind (%v)", ns, err)
	}
}

// TestChaosCatchesAnUnfencedAppend: built with the chaosfault tag, the
// workers write through a store whose appends and renewals skip the
// fencing check; a worker paused past its lease then goes on beside the
// one that took its runs over, their bodies run twice, and hitch chaos
// says so and exits 9.
func TestChaosCatchesAnUnfencedAppend(t *testing.T) {
	testproc.Heavy(t, "starts, kills and pauses worker processes")
	dir := t.TempDir()
	code, res, errOut := runChaos(t, testproc.Build(t, ".", "-tags", "chaosfault"), dir, append(chaosArgs, "--db", filepath.Join(dir, "real.db"), "--duration", "60s")...)
	if code != exitViolation || res.Report.Counts[chaos.DuplicateEffect] == 0 {
		t.Fatalf("exit %d, violations %v: the fault went unseen\n%s", code, res.Report.Counts, errOut)
	}
	if !strings.Contains(errOut, "--seed 9") {
		t.Errorf("the error does not say how to run the schedule again:\n%s", errOut)
	}
	t.Logf("caught: %v; first: %s", res.Report.Counts, res.Report.Violations[0])
}

// TestChaosRefusals: the store's own namespace, one that exists, and
// flags out of range are refused before anything starts.
func TestChaosRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "real.db")
	code, _, errOut := cli(t, "chaos", "--db", db, "--namespace", "real")
	if code != exitRefused || !strings.Contains(errOut, "the scratch namespace is the store's own") {
		t.Errorf("the store's own file: exit %d, %s", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "taken.db"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = cli(t, "chaos", "--db", db, "--namespace", "taken")
	if code != exitRefused || !strings.Contains(errOut, "exists already") {
		t.Errorf("an existing namespace: exit %d, %s", code, errOut)
	}
	for _, args := range [][]string{{"--runs", "0"}, {"--kills", "-1"}, {"--workers", "65"}, {"--namespace", "Bad-Name"}, {"--lease-ttl", "1ms"}} {
		code, _, errOut = cli(t, append([]string{"chaos", "--db", db}, args...)...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, %s", args, code, errOut)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("a refusal left files: %v", left)
	}
	if url := os.Getenv("HITCH_TEST_POSTGRES"); url != "" {
		code, _, errOut = cli(t, "chaos", "--db", url+"&schema=hitch_own", "--namespace", "hitch_own")
		if code != exitRefused || !strings.Contains(errOut, "schema hitch_own: the scratch namespace is the store's own") {
			t.Errorf("the store's own schema: exit %d, %s", code, errOut)
		}
	}
}
