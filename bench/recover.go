package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// RecoverParams describe a recovery measurement: Runs runs are brought
// into flight on one worker process of this binary (each waiting on its
// model), the process is killed with SIGKILL, and once their leases have
// expired one runtime recovers them all with the workload's model
// (ModelLatency a call).
type RecoverParams struct {
	Params
	// Command starts the node, as in NodesParams.
	Command []string
	// LeaseTTL is the killed node's lease: the wait before recovery.
	LeaseTTL time.Duration
}

// RecoverResult is one recovery measurement, timed from the recovery's
// start.
type RecoverResult struct {
	RecoverParams
	// Claimed is when every run was claimed again, InFlight when every run
	// had sent its model request again, Drained when every run had
	// completed.
	Claimed, InFlight, Drained time.Duration
	// PeakRSS is the recovering process's peak resident set size.
	PeakRSS uint64
}

// Line is the RESULT line of a recovery measurement.
func (r RecoverResult) Line() string {
	return fmt.Sprintf("RESULT peer=hitch mode=sqlite-%s recover=%d steps=%d model_latency=%s lease=%s claimed_s=%.3f in_flight_s=%.3f drained_s=%.3f peak_rss_mib=%d",
		strings.ToLower(r.Sync.String()), r.Runs, r.Steps, r.ModelLatency, r.LeaseTTL, r.Claimed.Seconds(), r.InFlight.Seconds(),
		r.Drained.Seconds(), r.PeakRSS>>20)
}

// RunRecover measures the recovery of p.Runs runs whose node died while
// each waited on its model.
func RunRecover(ctx context.Context, p RecoverParams) (RecoverResult, error) {
	res := RecoverResult{RecoverParams: p}
	st, err := sqlite.Open(ctx, p.DB, sqlite.WithSync(p.Sync))
	if err != nil {
		return res, err
	}
	defer st.Close()
	first, err := Agent(p.Steps, false)
	if err != nil {
		return res, err
	}
	starter, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{first}, Node: "starter"})
	if err != nil {
		return res, err
	}
	defer starter.Close(context.Background())

	// The node's model never answers: every run it claims stops mid call.
	args := append(slices.Clone(p.Command), "--node-store", p.DB, "--sync", p.Sync.String(), "--node-name", "doomed",
		"--steps", strconv.Itoa(p.Steps), "--model-latency", time.Hour.String(), "--poll", (50 * time.Millisecond).String(),
		"--max-runners", strconv.Itoa(p.Runs), "--node-lease", p.LeaseTTL.String(), "--node-in-flight", strconv.Itoa(p.Runs))
	node, err := startNode(args)
	if err != nil {
		return res, err
	}
	defer node.kill()
	if err := node.ready(ctx); err != nil {
		return res, err
	}
	if err := startDetached(ctx, starter, first, p.Runs); err != nil {
		return res, err
	}
	if err := node.await(ctx, "IN_FLIGHT"); err != nil {
		return res, err
	}
	node.kill()
	// The leases the node held run out by the store's clock.
	time.Sleep(p.LeaseTTL + 100*time.Millisecond)

	lat := newLatencyModel(nil, p.ModelLatency, p.ModelJitter, p.Runs)
	agent, err := agent(p.Steps, false, func(m model.Model) model.Model { lat.Model = m; return lat })
	if err != nil {
		return res, err
	}
	var ended atomic.Int64
	// One slot more than the runs, so that RecoverAll returns once it
	// has claimed them all instead of waiting for a slot to look again.
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{agent}, Node: "recoverer", MaxRunners: min(p.Runs+1, hitch.MaxMaxRunners),
		OnEvent: func(ev hitch.Event) {
			for _, e := range ev.Entries {
				if e.Kind == hitchtype.KindRunEnded {
					ended.Add(1)
				}
			}
		}})
	if err != nil {
		return res, err
	}
	defer rt.Close(context.Background())
	watch := watchPeaks(100 * time.Millisecond)
	begin := time.Now()
	n, err := rt.RecoverAll(ctx)
	if err != nil {
		return res, err
	}
	res.Claimed = time.Since(begin)
	if n != p.Runs {
		return res, fmt.Errorf("bench: recovered %d runs of %d", n, p.Runs)
	}
	for lat.requests.Load() < int64(p.Runs) {
		time.Sleep(time.Millisecond)
	}
	res.InFlight = time.Since(begin)
	if err := rt.Wait(ctx); err != nil {
		return res, err
	}
	res.Drained = time.Since(begin)
	_, _, res.PeakRSS = watch.end()
	counts, err := store.RunCounts(ctx, st, "")
	if err != nil {
		return res, err
	}
	if counts[hitchtype.StatusCompleted] != p.Runs || ended.Load() != int64(p.Runs) {
		return res, fmt.Errorf("bench: after recovery %d runs completed (%d ended here) of %d: %v",
			counts[hitchtype.StatusCompleted], ended.Load(), p.Runs, counts)
	}
	return res, nil
}
