package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/server"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/tool"
)

// ParkedParams describe the parked workload: a store filled with runs that
// each wait for a person's approval, and the routes a person and an
// operator use on it.
type ParkedParams struct {
	// Runs is how many parked runs the store should hold; the fill starts
	// only what is missing, so a store filled before is measured again.
	Runs int
	// Store is the store to fill and measure (SQLite or PostgreSQL).
	Store store.Store
	// Samples is how many times each route is timed; default 200.
	Samples int
	// Workers start runs at once during the fill; default 64.
	Workers int
	// Progress, when set, is told how the fill goes now and then.
	Progress io.Writer
	// IdleFor is how long the idle sweeper is watched; default 5s.
	IdleFor time.Duration
}

// ParkedResult is what the parked workload measured.
type ParkedResult struct {
	Runs    int           // parked runs in the store when measured
	Started int           // runs this fill started
	Fill    time.Duration // how long the fill took
	Routes  []Route
	// IdleCPU is the share of one core an idle sweeper used over the
	// store, measured for IdleFor.
	IdleCPU float64
	IdleFor time.Duration
}

// Route is one route's timings over its samples.
type Route struct {
	Name     string
	Samples  int
	P50, P99 time.Duration
	Max      time.Duration
}

// Lines prints the result, one line per figure.
func (r ParkedResult) Lines() string {
	var b strings.Builder
	fmt.Fprintf(&b, "RESULT parked runs=%d started=%d fill_s=%.1f fill_runs_per_s=%.0f\n", r.Runs, r.Started,
		r.Fill.Seconds(), float64(r.Started)/max(r.Fill.Seconds(), 1e-9))
	for _, rt := range r.Routes {
		fmt.Fprintf(&b, "ROUTE %-44s n=%-4d p50=%-9s p99=%-9s max=%s\n", rt.Name, rt.Samples, msText(rt.P50), msText(rt.P99), msText(rt.Max))
	}
	fmt.Fprintf(&b, "IDLE sweeper over %s: %.2f%% of a core\n", r.IdleFor, 100*r.IdleCPU)
	return b.String()
}

func msText(d time.Duration) string { return fmt.Sprintf("%.2fms", ms(d)) }

// parkedAgent asks for a "payments" approval before its one tool call, then
// answers.
func parkedAgent() (*hitch.Agent, *approval.Static, error) {
	charge, err := tool.New("charge", "Charges a card.", func(context.Context, struct{}) (string, error) { return "charged", nil })
	if err != nil {
		return nil, nil, err
	}
	approvers, err := approval.NewStatic(approval.Member{Name: "ops", Secret: "parked-bench-secret", Requirements: []string{"payments"}})
	if err != nil {
		return nil, nil, err
	}
	pol := policy.Rules{
		{Tools: []string{"charge"}, Verdict: policy.RequireApproval, Requirement: "payments", Reason: "a person approves each charge"},
	}
	a, err := hitch.Build(hitch.Spec{
		Name:      "parked",
		Model:     scripted.New("parked", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "charge"}}}, {Text: "charged"}}}),
		Tools:     []tool.Tool{charge},
		Policy:    pol,
		Approvers: approvers,
	})
	return a, approvers, err
}

// Parked fills p.Store with parked runs through the library (each run is
// started, asks for an approval and parks) and times the routes on it:
// listing approvals and counting runs (through the runtime and the HTTP
// API), a run's page and its context account, answering one approval
// until its run completes, twenty in parallel, and the CPU of an idle
// sweeper.
func Parked(ctx context.Context, p ParkedParams) (ParkedResult, error) {
	p.Samples = cmp.Or(p.Samples, 200)
	p.Workers = cmp.Or(p.Workers, 64)
	p.IdleFor = cmp.Or(p.IdleFor, 5*time.Second)
	agent, approvers, err := parkedAgent()
	if err != nil {
		return ParkedResult{}, err
	}
	rt, err := hitch.Open(hitch.Config{Store: p.Store, Agents: []*hitch.Agent{agent}, MaxRunners: p.Workers})
	if err != nil {
		return ParkedResult{}, err
	}
	defer rt.Close(context.Background())

	var res ParkedResult
	have, err := rt.RunCounts(ctx, "")
	if err != nil {
		return res, err
	}
	begin := time.Now()
	if err := fillParked(ctx, rt, agent, p, have[hitchtype.StatusWaiting]); err != nil {
		return res, err
	}
	res.Fill = time.Since(begin)
	counts, err := rt.RunCounts(ctx, "")
	if err != nil {
		return res, err
	}
	res.Runs, res.Started = counts[hitchtype.StatusWaiting], max(p.Runs-have[hitchtype.StatusWaiting], 0)

	srv, err := server.New(server.Config{Runtime: rt, Store: p.Store, Agents: []*hitch.Agent{agent}, NoConsole: false})
	if err != nil {
		return res, err
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	get := func(path string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+path, nil)
		if err != nil {
			return err
		}
		// The console's sign-in of the server's implicit local principal:
		// "t.<unix seconds>.<token>", with no token.
		req.AddCookie(&http.Cookie{Name: "hitch_session", Value: "t." + strconv.FormatInt(time.Now().Unix(), 10) + "."})
		resp, err := noRedirect.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		return nil
	}

	first, next, err := rt.PendingApprovals(ctx, hitch.PendingApprovalsParams{Limit: 50})
	if err != nil {
		return res, err
	}
	if len(first) == 0 {
		return res, errors.New("bench: no approval request waits")
	}
	oldest := first[0]
	routes := []struct {
		name string
		fn   func() error
	}{
		{"library: approvals, first page of 50", func() error {
			_, _, err := rt.PendingApprovals(ctx, hitch.PendingApprovalsParams{Limit: 50})
			return err
		}},
		{"library: approvals, second page of 50", func() error {
			_, _, err := rt.PendingApprovals(ctx, hitch.PendingApprovalsParams{Limit: 50, After: next})
			return err
		}},
		{"library: counts by status", func() error { _, err := rt.RunCounts(ctx, ""); return err }},
		{"library: run, family usage and cost", func() error {
			if _, err := rt.Get(ctx, oldest.RunID); err != nil {
				return err
			}
			if _, err := rt.FamilyUsage(ctx, oldest.RootID); err != nil {
				return err
			}
			_, err := rt.FamilyCost(ctx, oldest.RootID)
			return err
		}},
		{"GET /v1/approvals?limit=50", func() error { return get("/v1/approvals?limit=50") }},
		{"GET /v1/runs/counts", func() error { return get("/v1/runs/counts") }},
		{"GET /v1/runs?limit=50", func() error { return get("/v1/runs?limit=50") }},
		{"GET /v1/runs/{id}", func() error { return get("/v1/runs/" + oldest.RunID) }},
		{"GET /v1/runs/{id}/context", func() error { return get("/v1/runs/" + oldest.RunID + "/context") }},
		{"console: GET /runs/{id}", func() error { return get("/runs/" + oldest.RunID) }},
		{"console: GET /approvals", func() error { return get("/approvals") }},
	}
	for _, r := range routes {
		t, err := timeRoute(r.name, p.Samples, r.fn)
		if err != nil {
			return res, err
		}
		res.Routes = append(res.Routes, t)
	}

	// Answer the oldest requests, one at a time and then twenty at once:
	// each from the answer to its run's completion.
	prove := func() (approval.Proof, error) {
		return approvers.Check(ctx, approval.Credential{Name: "ops", Secret: "parked-bench-secret"}, "payments")
	}
	answer := func(a hitch.PendingApproval) error {
		pr, err := prove()
		if err != nil {
			return err
		}
		if err := rt.Approve(ctx, a.RunID, a.Call, pr); err != nil {
			return fmt.Errorf("approve %s: %w", a.RunID, err)
		}
		run, err := rt.Await(ctx, a.RunID)
		if err == nil && run.Status != hitchtype.StatusCompleted {
			err = fmt.Errorf("run %s ended %s", run.ID, run.Status)
		}
		return err
	}
	const one, parallel, rounds = 20, 20, 5
	queue, _, err := rt.PendingApprovals(ctx, hitch.PendingApprovalsParams{Limit: one + parallel*rounds})
	if err != nil {
		return res, err
	}
	if len(queue) < one+parallel*rounds {
		return res, fmt.Errorf("bench: %d approval requests wait; the answers need %d", len(queue), one+parallel*rounds)
	}
	i := 0
	t, err := timeRoute("approve one → run completed", one, func() error { i++; return answer(queue[i-1]) })
	if err != nil {
		return res, err
	}
	res.Routes = append(res.Routes, t)
	t, err = timeRoute(fmt.Sprintf("approve %d in parallel → all completed", parallel), rounds, func() error {
		batch := queue[i : i+parallel]
		i += parallel
		errs := make([]error, len(batch))
		var wg sync.WaitGroup
		for k, a := range batch {
			wg.Go(func() { errs[k] = answer(a) })
		}
		wg.Wait()
		return errors.Join(errs...)
	})
	if err != nil {
		return res, err
	}
	res.Routes = append(res.Routes, t)

	res.IdleFor = p.IdleFor
	res.IdleCPU, err = idleCPU(ctx, rt, res.IdleFor)
	return res, err
}

// fillParked starts runs until the store holds p.Runs parked ones.
func fillParked(ctx context.Context, rt *hitch.Runtime, agent *hitch.Agent, p ParkedParams, have int) error {
	missing := p.Runs - have
	if missing <= 0 {
		return nil
	}
	var next, done atomic.Int64
	errs := make(chan error, p.Workers)
	stamp := time.Now().UnixNano()
	var wg sync.WaitGroup
	for range p.Workers {
		wg.Go(func() {
			for {
				n := next.Add(1)
				if n > int64(missing) || ctx.Err() != nil {
					return
				}
				id := fmt.Sprintf("parked-%x-%07d", stamp, n)
				res, err := rt.Start(ctx, agent, "charge the card", hitch.WithID(id))
				if err == nil {
					var run hitch.Run
					if run, err = rt.Await(ctx, res.Run.ID); err == nil && run.Status != hitchtype.StatusWaiting {
						err = fmt.Errorf("run %s is %s, not waiting", run.ID, run.Status)
					}
				}
				if err != nil {
					errs <- err
					return
				}
				if d := done.Add(1); p.Progress != nil && d%10000 == 0 {
					fmt.Fprintf(p.Progress, "parked %d of %d\n", d, missing)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// noRedirect reports a redirect (to the console's sign-in) as the answer.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// timeRoute calls fn n times, one after another, and returns the spread.
func timeRoute(name string, n int, fn func() error) (Route, error) {
	ds := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if err := fn(); err != nil {
			return Route{}, fmt.Errorf("bench: %s: %w", name, err)
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	return Route{Name: name, Samples: n, P50: ds[n/2], P99: ds[min(n-1, n*99/100)], Max: ds[n-1]}, nil
}

// idleCPU runs the sweeper over the store for d and returns the CPU the
// process used meanwhile, as a share of one core.
func idleCPU(ctx context.Context, rt *hitch.Runtime, d time.Duration) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	before, err := cpuTime()
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	if err := rt.Sweep(ctx, hitch.DefaultSweepInterval); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return 0, err
	}
	after, err := cpuTime()
	if err != nil {
		return 0, err
	}
	return (after - before).Seconds() / time.Since(t0).Seconds(), nil
}
