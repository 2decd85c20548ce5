package chaos

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/childproc"
	"github.com/hitch-dev/hitch/internal/ident"
	"github.com/hitch-dev/hitch/store"
)

// Errors of Run's refusals: nothing was touched.
var (
	// ErrRealNamespace: the scratch namespace named is the store's own.
	ErrRealNamespace = errors.New("the scratch namespace is the store's own")
	// ErrNamespaceExists: a file or schema of the scratch namespace's name
	// exists already; Run drops its namespace, so it only uses a new one.
	ErrNamespaceExists = errors.New("the scratch namespace exists already")
)

// Defaults and bounds of a workload (each a row of defaults.Table): big
// enough to land faults inside steps, bounded so that it ends in minutes.
const (
	DefaultRuns     = 300
	DefaultKills    = 20
	DefaultWorkers  = 3
	DefaultDuration = 5 * time.Minute
	// DefaultLeaseTTL is the workers' lease: short, so that a killed or
	// paused worker's runs are taken over within the workload.
	DefaultLeaseTTL = time.Second
	MaxRuns         = 100_000
	MaxKills        = 10_000
	MaxWorkers      = 64
	MaxDuration     = 24 * time.Hour
)

// Params describe a chaos workload. Zero values take the Default
// constants.
type Params struct {
	// Store is the deployment's store: a SQLite file or a PostgreSQL URL
	// (with its schema parameter, if any). Run never writes to it: it
	// works in a scratch namespace beside it.
	Store string
	// Namespace names the scratch namespace: a SQLite file NAME.db in the
	// store's folder, or a PostgreSQL schema NAME. Default hitch_chaos_
	// and 12 random hex digits. It must not exist yet.
	Namespace string
	// Runs is how many runs of the workload's agent to start.
	Runs int
	// Kills is how many faults to inject: SIGKILL of a worker (started
	// again at once), SIGSTOP for longer than a lease then SIGCONT, or,
	// with Cuts on PostgreSQL, every connection of the workers terminated.
	Kills int
	// Workers is how many worker processes drive the runs.
	Workers int
	// Duration bounds the whole workload; runs that have not ended by
	// then are lost.
	Duration time.Duration
	// Seed makes the schedule: which fault, when, to which worker, and
	// which runs start between faults. 0 picks one (the result says it).
	Seed uint64
	// Cuts adds connection cuts (pg_terminate_backend) on PostgreSQL.
	Cuts bool
	// Keep keeps the scratch namespace and the effects file.
	Keep bool
	// LeaseTTL is the workers' lease; a pause lasts 1 to 2 of it, and a
	// sweep of the others more.
	LeaseTTL time.Duration
	// Command starts one worker: this binary and the arguments that make
	// it serve as one (see ServeNode), to which the node's flags
	// --node-store, --node-effects, --node-name, --lease-ttl and
	// --node-poll are appended.
	Command []string
	// Log, when set, gets a line for each fault.
	Log io.Writer
}

// Result is what a workload did and what Verify found.
type Result struct {
	Seed      uint64 `json:"seed"`
	Driver    string `json:"driver"`
	Namespace string `json:"namespace"`
	// Kept names where the scratch store and effects are, with Keep.
	Kept    []string `json:"kept,omitempty"`
	Runs    int      `json:"runs"`
	Workers int      `json:"workers"`
	Kills   int      `json:"kills"`
	Pauses  int      `json:"pauses"`
	Cuts    int      `json:"cuts"`
	// CutBackends counts the connections the cuts terminated; CutsRefused
	// says why cuts were given up (the role may not terminate them).
	CutBackends int    `json:"cut_backends"`
	CutsRefused string `json:"cuts_refused,omitempty"`
	// Reconciled counts the uncertain calls Run settled from the effects
	// file (ran: its output; did not run: failed).
	Reconciled int `json:"reconciled"`
	// Drain is the time from the last fault until every run had ended;
	// Elapsed the whole workload's.
	Drain   time.Duration `json:"drain_ns"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Report  Report        `json:"report"`
}

// withDefaults fills p's zero values from the defaults table.
func (p Params) withDefaults() Params {
	if p.Runs == 0 {
		p.Runs = DefaultRuns
	}
	if p.Workers == 0 {
		p.Workers = DefaultWorkers
	}
	if p.Duration == 0 {
		p.Duration = DefaultDuration
	}
	if p.LeaseTTL == 0 {
		p.LeaseTTL = DefaultLeaseTTL
	}
	if p.Seed == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		p.Seed = max(1, uint64(b[0])|uint64(b[1])<<8|uint64(b[2])<<16|uint64(b[3])<<24|uint64(b[4])<<32|uint64(b[5])<<40)
	}
	if p.Namespace == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		p.Namespace = "hitch_chaos_" + hex.EncodeToString(b[:])
	}
	return p
}

// Check says what is wrong with p, every problem at once.
func (p Params) Check() error {
	var errs []error
	if p.Store == "" {
		errs = append(errs, errors.New("store: required"))
	}
	if p.Namespace != "" && !ident.Schema(p.Namespace) {
		errs = append(errs, fmt.Errorf("namespace %q: want 1 to 63 of a-z, 0-9 and _, not starting with a digit", p.Namespace))
	}
	if p.Runs < 0 || p.Runs > MaxRuns {
		errs = append(errs, fmt.Errorf("runs %d: want 1 to %d", p.Runs, MaxRuns))
	}
	if p.Kills < 0 || p.Kills > MaxKills {
		errs = append(errs, fmt.Errorf("kills %d: want 0 to %d", p.Kills, MaxKills))
	}
	if p.Workers < 0 || p.Workers > MaxWorkers {
		errs = append(errs, fmt.Errorf("workers %d: want 1 to %d", p.Workers, MaxWorkers))
	}
	if p.Duration < 0 || p.Duration > MaxDuration {
		errs = append(errs, fmt.Errorf("duration %s: want up to %s", p.Duration, MaxDuration))
	}
	if p.LeaseTTL != 0 && (p.LeaseTTL < 100*time.Millisecond || p.LeaseTTL > time.Minute) {
		errs = append(errs, fmt.Errorf("lease TTL %s: want 100ms to 1m", p.LeaseTTL))
	}
	if len(p.Command) == 0 {
		errs = append(errs, errors.New("command: required, to start the workers"))
	}
	return errors.Join(errs...)
}

// fault is one step of the schedule.
type fault struct {
	gap    time.Duration // wait before it
	kind   string        // "kill", "pause" or "cut"
	worker int
	pause  time.Duration
}

// schedule draws the faults from the seed: the same seed, the same
// schedule.
func schedule(p Params, cuts bool) []fault {
	rng := mrand.New(mrand.NewPCG(p.Seed, p.Seed^0x9e3779b97f4a7c15))
	fs := make([]fault, p.Kills)
	for i := range fs {
		f := fault{gap: time.Duration(100+rng.IntN(300)) * time.Millisecond, kind: "kill", worker: rng.IntN(p.Workers)}
		switch r := rng.IntN(6); {
		case r < 2:
			// Past the lease, so another worker takes the runs over, and
			// short enough that it is still driving them at the SIGCONT.
			f.kind, f.pause = "pause", p.LeaseTTL+nodePoll+time.Duration(rng.Int64N(int64(p.LeaseTTL)))
		case r == 2 && cuts:
			f.kind = "cut"
		}
		fs[i] = f
	}
	return fs
}

// Run runs a chaos workload in a scratch namespace beside p.Store and
// verifies it: p.Runs runs of Agent, driven by p.Workers processes that
// are killed, paused and cut from the database by a seeded schedule while
// the runs are started batch by batch between the faults. Then every
// worker is left alone; Run reconciles each uncertain call from the
// effects file (it knows whether the body ran) until every run has ended,
// and calls Verify. The namespace is dropped unless p.Keep. An error means
// the workload could not be run; a broken promise is in Result.Report.
func Run(ctx context.Context, p Params) (Result, error) {
	if err := p.Check(); err != nil {
		return Result{}, err
	}
	p = p.withDefaults()
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, p.Duration)
	defer cancel()
	res := Result{Seed: p.Seed, Namespace: p.Namespace, Runs: p.Runs, Workers: p.Workers, Driver: "sqlite"}
	ns, err := newNamespace(ctx, p)
	if err != nil {
		return res, err
	}
	if ns.postgres {
		res.Driver = "postgres"
	}
	defer func() {
		if p.Keep {
			return
		}
		ns.drop()
	}()
	if p.Keep {
		res.Kept = []string{ns.loc, ns.effects}
		if ns.postgres { // the URL may hold a password
			res.Kept[0] = "schema " + p.Namespace
		}
	}
	st, err := openStore(ctx, ns.loc, true, 0)
	if err != nil {
		return res, fmt.Errorf("chaos: create the scratch store: %w", err)
	}
	defer st.Close()
	a, err := Agent(ns.effects, "chaos")
	if err != nil {
		return res, err
	}
	// This process starts the runs and reconciles; it drives only the
	// runs it reconciles, and is never faulted.
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{a}, Node: "chaos", LeaseTTL: p.LeaseTTL,
		Logger: slog.New(slog.DiscardHandler)}) // a lost race with a worker is part of the workload, not news
	if err != nil {
		return res, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), hitch.DefaultDrainWindow)
		defer cancel()
		_ = rt.Close(dctx)
	}()

	c := &cluster{p: p, ns: ns}
	defer c.killAll()
	for i := range p.Workers {
		if err := c.start(ctx, i); err != nil {
			return res, err
		}
	}
	var db *pgx.Conn
	if ns.postgres && p.Cuts {
		conn, _, _ := splitSchema(ns.loc)
		if db, err = pgx.Connect(ctx, conn); err != nil {
			return res, fmt.Errorf("chaos: connect to cut connections: %w", err)
		}
		defer db.Close(context.Background())
	}

	ids := make([]string, p.Runs)
	for i := range ids {
		ids[i] = fmt.Sprintf("chaos-%05d", i)
	}
	faults := schedule(p, db != nil)
	batches := max(len(faults), 1)
	startBatch := func(b int) error {
		for _, id := range ids[b*p.Runs/batches : (b+1)*p.Runs/batches] {
			if _, err := rt.Start(ctx, a, "act", hitch.WithID(id), hitch.Detached()); err != nil {
				return fmt.Errorf("chaos: start %s: %w", id, err)
			}
		}
		return nil
	}
	if len(faults) == 0 {
		if err := startBatch(0); err != nil {
			return res, err
		}
	}
	for i, f := range faults {
		if err := startBatch(i); err != nil {
			return res, err
		}
		if !sleep(ctx, f.gap) {
			break
		}
		c.logf("fault %d/%d: %s %s", i+1, len(faults), f.kind, c.workers[f.worker].name)
		switch f.kind {
		case "kill":
			if err := c.kill(ctx, f.worker); err != nil {
				return res, err
			}
			res.Kills++
		case "pause":
			c.pause(ctx, f.worker, f.pause)
			res.Pauses++
		case "cut":
			if res.CutsRefused != "" {
				continue
			}
			n, err := cut(ctx, db, c.appName())
			if err != nil {
				res.CutsRefused = err.Error()
				continue
			}
			res.Cuts++
			res.CutBackends += n
		}
	}
	lastFault := time.Now()

	// Drain: reconcile what waits on an uncertain call until every run
	// has ended, or the duration is up.
	pending := slices.Clone(ids)
	for len(pending) > 0 && ctx.Err() == nil {
		ran, err := readEffects(ns.effects)
		if err != nil {
			return res, err
		}
		left := pending[:0]
		for _, id := range pending {
			r, err := st.RunGet(ctx, id)
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				return res, fmt.Errorf("chaos: read run %s: %w", id, err)
			}
			if r.Status.Terminal() {
				continue
			}
			left = append(left, id)
			if r.Status == hitchtype.StatusWaiting {
				n, err := reconcile(ctx, st, rt, id, ran)
				if err != nil {
					return res, err
				}
				res.Reconciled += n
			}
		}
		pending = left
		if len(pending) > 0 {
			sleep(ctx, 100*time.Millisecond)
		}
	}
	res.Drain = time.Since(lastFault)

	vctx, vcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer vcancel()
	f, err := os.Open(ns.effects)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, err
	}
	var effects io.Reader = bytes.NewReader(nil)
	if f != nil {
		defer f.Close()
		effects = f
	}
	res.Report, err = Verify(vctx, st, VerifyParams{Runs: ids, Effects: effects, Ended: true})
	if err != nil {
		return res, err
	}
	c.stopAll()
	res.Elapsed = time.Since(began)
	return res, nil
}

// reconcile settles the uncertain calls of a waiting run that are not yet
// reconciled, as the effects file says: the body ran (its output) or did
// not (failed: it did not act). It returns how many it settled; a live
// runner that holds the run is left for the next pass.
func reconcile(ctx context.Context, st store.Store, rt *hitch.Runtime, id string, ran map[[2]string]bool) (int, error) {
	es, err := readJournal(ctx, st, id)
	if err != nil {
		return 0, err
	}
	var uncertain []string
	done := map[string]bool{}
	for _, e := range es {
		var c struct{ Call string }
		_ = json.Unmarshal(e.Data, &c)
		switch e.Kind {
		case hitchtype.KindCallUncertain:
			uncertain = append(uncertain, c.Call)
		case hitchtype.KindCallReconcile:
			done[c.Call] = true
		}
	}
	n := 0
	for _, call := range uncertain {
		if done[call] {
			continue
		}
		rec := hitch.Reconciliation{Call: call, By: "chaos", Error: "the body did not run"}
		if ran[[2]string{id, call}] {
			rec = hitch.Reconciliation{Call: call, By: "chaos", Output: "done"}
		}
		err := rt.Reconcile(ctx, id, rec)
		switch {
		case err == nil:
			n++
		case errors.Is(err, hitch.ErrRunnerBusy), errors.Is(err, hitch.ErrReconciled), errors.Is(err, hitch.ErrNotUncertain),
			errors.Is(err, hitch.ErrEnded), errors.Is(err, store.ErrFenced), errors.Is(err, store.ErrConflict), ctx.Err() != nil:
			// Another runner holds or took the run: the next pass sees it.
		default:
			return n, fmt.Errorf("chaos: reconcile %s %s: %w", id, call, err)
		}
	}
	return n, nil
}

// readEffects reads which calls' bodies ran.
func readEffects(path string) (map[[2]string]bool, error) {
	ran := map[[2]string]bool{}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return ran, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var run, call, who string
		if n, _ := fmt.Sscan(sc.Text(), &run, &call, &who); n == 3 {
			ran[[2]string{run, call}] = true
		}
	}
	return ran, sc.Err()
}

// sleep waits d or until ctx ends, and says whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// cut terminates every database connection of the workers, as a failover
// or a network cut would.
func cut(ctx context.Context, db *pgx.Conn, appName string) (int, error) {
	var n int
	err := db.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND datname = current_database() AND application_name = $1`, appName).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("cut connections: %w", err)
	}
	return n, nil
}

// namespace is the scratch store: where it is, and how to drop it.
type namespace struct {
	postgres bool
	loc      string // the scratch store's location, for the workers
	effects  string
	dir      string // what Run made besides the store: effects, logs
	drop     func()
}

// newNamespace makes the scratch namespace's place, refusing the store's
// own namespace and one that exists.
func newNamespace(ctx context.Context, p Params) (*namespace, error) {
	dir, err := os.MkdirTemp("", p.Namespace+"-")
	if err != nil {
		return nil, err
	}
	ns := &namespace{effects: filepath.Join(dir, "effects.log"), dir: dir}
	if !isPostgres(p.Store) {
		real, err := filepath.Abs(p.Store)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		ns.loc = filepath.Join(filepath.Dir(real), p.Namespace+".db")
		if ns.loc == real {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("chaos: %s: %w", ns.loc, ErrRealNamespace)
		}
		if _, err := os.Stat(ns.loc); err == nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("chaos: %s: %w", ns.loc, ErrNamespaceExists)
		}
		ns.drop = func() {
			for _, s := range []string{"", "-wal", "-shm", "-journal"} {
				_ = os.Remove(ns.loc + s)
			}
			_ = os.RemoveAll(dir)
		}
		return ns, nil
	}
	ns.postgres = true
	conn, schema, err := splitSchema(p.Store)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	db, err := pgx.Connect(ctx, conn)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("chaos: connect: %w", err)
	}
	defer db.Close(context.Background())
	if schema == "" {
		if err := db.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("chaos: the store's schema: %w", err)
		}
	}
	if schema == p.Namespace {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("chaos: schema %s: %w", schema, ErrRealNamespace)
	}
	var exists bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, p.Namespace).Scan(&exists); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("chaos: look for schema %s: %w", p.Namespace, err)
	}
	if exists {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("chaos: schema %s: %w", p.Namespace, ErrNamespaceExists)
	}
	if ns.loc, err = withParams(conn, "schema", p.Namespace); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	ns.drop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if db, err := pgx.Connect(ctx, conn); err == nil {
			_, _ = db.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{p.Namespace}.Sanitize()+" CASCADE")
			db.Close(ctx)
		}
		_ = os.RemoveAll(dir)
	}
	return ns, nil
}

// cluster is the worker processes.
type cluster struct {
	p       Params
	ns      *namespace
	gen     int
	workers []*worker
}

// worker is one worker process.
type worker struct {
	name string
	cmd  *exec.Cmd
	done chan error
	log  *os.File
}

func (c *cluster) logf(format string, args ...any) {
	if c.p.Log != nil {
		fmt.Fprintf(c.p.Log, "chaos: "+format+"\n", args...)
	}
}

// appName tags the workers' PostgreSQL connections, for the cuts.
func (c *cluster) appName() string { return c.p.Namespace }

// start starts worker i (again) and waits until it sweeps.
func (c *cluster) start(ctx context.Context, i int) error {
	c.gen++
	name := fmt.Sprintf("w%d.%d", i, c.gen)
	loc := c.ns.loc
	if c.ns.postgres {
		var err error
		if loc, err = withParams(loc, "application_name", c.appName()); err != nil {
			return err
		}
	}
	args := append(slices.Clone(c.p.Command[1:]), "--node-store", loc, "--node-effects", c.ns.effects, "--node-name", name,
		"--lease-ttl", c.p.LeaseTTL.String(), "--node-poll", nodePoll.String())
	cmd := exec.Command(c.p.Command[0], args...)
	childproc.DieWithParent(cmd)
	logf, err := os.Create(filepath.Join(c.ns.dir, name+".log"))
	if err != nil {
		return err
	}
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("chaos: start worker %s: %w", name, err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := sc.Scan() && sc.Text() == "READY"
		ready <- ok
		_, _ = io.Copy(io.Discard, out)
	}()
	w := &worker{name: name, cmd: cmd, done: make(chan error, 1), log: logf}
	t := time.NewTimer(workerStart)
	defer t.Stop()
	select {
	case ok := <-ready:
		if !ok {
			_ = cmd.Process.Kill()
			err := cmd.Wait()
			logf.Close()
			b, _ := os.ReadFile(logf.Name())
			return fmt.Errorf("chaos: worker %s did not start (%v): %s", name, err, bytes.TrimSpace(b))
		}
	case <-t.C:
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		return fmt.Errorf("chaos: worker %s did not start within %s", name, workerStart)
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		return ctx.Err()
	}
	go func() { w.done <- cmd.Wait(); logf.Close() }()
	if i < len(c.workers) {
		c.workers[i] = w
	} else {
		c.workers = append(c.workers, w)
	}
	return nil
}

// How long a worker may take to start, and how often it sweeps.
const (
	workerStart = 30 * time.Second
	nodePoll    = 100 * time.Millisecond
)

// kill kills worker i with SIGKILL and starts it again.
func (c *cluster) kill(ctx context.Context, i int) error {
	w := c.workers[i]
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.done
	return c.start(ctx, i)
}

// pause stops worker i with SIGSTOP for d, then lets it go on.
func (c *cluster) pause(ctx context.Context, i int, d time.Duration) {
	w := c.workers[i]
	_ = w.cmd.Process.Signal(syscall.SIGSTOP)
	sleep(ctx, d) // the pause is the fault
	_ = w.cmd.Process.Signal(syscall.SIGCONT)
}

// stopAll stops every worker gracefully (SIGTERM: each drains), killing
// one that does not exit in time.
func (c *cluster) stopAll() {
	for _, w := range c.workers {
		_ = w.cmd.Process.Signal(syscall.SIGCONT)
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, w := range c.workers {
		t := time.NewTimer(hitch.DefaultDrainWindow + 5*time.Second)
		select {
		case <-w.done:
		case <-t.C:
			_ = w.cmd.Process.Kill()
			<-w.done
		}
		t.Stop()
		w.done <- nil // for killAll
	}
}

// killAll kills every worker still running.
func (c *cluster) killAll() {
	for _, w := range c.workers {
		select {
		case <-w.done:
			continue
		default:
		}
		_ = w.cmd.Process.Signal(syscall.SIGCONT)
		_ = w.cmd.Process.Kill()
		<-w.done
	}
}
