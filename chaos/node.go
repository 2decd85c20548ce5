package chaos

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/postgres"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/tool"
)

// The workload's agent: four turns that call the effect tool (six calls
// in all), each reply taking a model's latency, then a final answer. A run
// lasts about a second: longer than a worker's pause takes to be noticed,
// so that a paused worker resumes while another still drives its runs.
const (
	agentName    = "chaos"
	turnLatency  = 200 * time.Millisecond
	maxBodyPause = 40 * time.Millisecond
)

// Agent is the workload's agent. Its one tool, effect, is not replayable:
// each time its body runs it appends "RUN CALL WHO" to the file effects in
// one write, then takes a moment (long enough to be killed inside, at
// times). who names the process, for the report.
func Agent(effects, who string) (*hitch.Agent, error) {
	effect, err := tool.New("effect", "Acts once: appends a line to a file.", func(ctx context.Context, _ struct{}) (string, error) {
		info, _ := tool.CallFrom(ctx)
		f, err := os.OpenFile(effects, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		_, err = fmt.Fprintf(f, "%s %s %s\n", info.RunID, info.Call, who)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", err
		}
		t := time.NewTimer(time.Duration(rand.Int64N(int64(maxBodyPause))))
		defer t.Stop()
		select {
		case <-t.C:
			return "done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	if err != nil {
		return nil, err
	}
	var turns []scripted.Turn
	for i := range 4 {
		calls := []scripted.Call{{Name: "effect"}}
		if i%2 == 1 {
			calls = append(calls, scripted.Call{Name: "effect"})
		}
		turns = append(turns, scripted.Turn{Calls: calls, Delay: turnLatency})
	}
	m := scripted.New(agentName, scripted.Script{Turns: append(turns, scripted.Turn{Text: "done", Delay: turnLatency})})
	// Every recovery issues the model call in flight again, and each
	// attempt counts: allow many.
	return hitch.Build(hitch.Spec{Name: agentName, Model: m, Tools: []tool.Tool{effect}, Policy: policy.AllowAll(),
		Limits: hitch.Limits{ModelAttempts: 1000, RetryDelay: 10 * time.Millisecond}})
}

// NodeParams describe one worker process of a chaos workload.
type NodeParams struct {
	// Store is the scratch namespace: a SQLite file, or a PostgreSQL URL
	// whose schema parameter names the scratch schema.
	Store string
	// Effects is the file the agent's tool appends to.
	Effects string
	// Name is the node's name, in leases and effects.
	Name     string
	LeaseTTL time.Duration
	Poll     time.Duration
	// Out gets READY once the node sweeps.
	Out io.Writer
}

// ServeNode is one worker process of Run: it drives the workload's runs
// on the scratch store, as hitch worker does, until ctx ends (SIGTERM);
// then it drains, as hitch worker does, and returns.
func ServeNode(ctx context.Context, p NodeParams) error {
	if p.Name == "" || p.Effects == "" || p.Store == "" {
		return fmt.Errorf("chaos node: the store, the effects file and the name are required")
	}
	st, err := openStore(context.WithoutCancel(ctx), p.Store, false, p.Poll)
	if err != nil {
		return err
	}
	st = faulty(st)
	defer st.Close()
	a, err := Agent(p.Effects, p.Name)
	if err != nil {
		return err
	}
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{a}, Node: p.Name, LeaseTTL: p.LeaseTTL})
	if err != nil {
		return err
	}
	fmt.Fprintln(p.Out, "READY")
	err = rt.Sweep(ctx, p.Poll)
	dctx, cancel := context.WithTimeout(context.Background(), hitch.DefaultDrainWindow)
	defer cancel()
	if cerr := rt.Close(dctx); err == nil {
		err = cerr
	}
	return err
}

// isPostgres says whether a store location is a PostgreSQL URL.
func isPostgres(loc string) bool {
	return strings.HasPrefix(loc, "postgres://") || strings.HasPrefix(loc, "postgresql://")
}

// splitSchema takes the schema parameter (and hitch's other one,
// poll_only) out of a PostgreSQL URL.
func splitSchema(loc string) (conn, schema string, err error) {
	u, err := url.Parse(loc)
	if err != nil {
		return "", "", fmt.Errorf("store URL: %w", err)
	}
	q := u.Query()
	schema = q.Get("schema")
	q.Del("schema")
	q.Del("poll_only")
	u.RawQuery = q.Encode()
	return u.String(), schema, nil
}

// withParams sets query parameters of a PostgreSQL URL.
func withParams(loc string, kv ...string) (string, error) {
	u, err := url.Parse(loc)
	if err != nil {
		return "", fmt.Errorf("store URL: %w", err)
	}
	q := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// openStore opens a scratch store; create makes it (a SQLite file, a
// PostgreSQL schema migrated).
func openStore(ctx context.Context, loc string, create bool, poll time.Duration) (store.Store, error) {
	if !isPostgres(loc) {
		if !create {
			if _, err := os.Stat(loc); err != nil {
				return nil, fmt.Errorf("open scratch store: %w", err)
			}
		}
		return sqlite.Open(ctx, loc)
	}
	conn, schema, err := splitSchema(loc)
	if err != nil {
		return nil, err
	}
	opts := []postgres.Option{postgres.WithSchema(schema), postgres.WithAutoMigrate(create)}
	if poll > 0 {
		opts = append(opts, postgres.WithPollInterval(poll))
	}
	return postgres.Open(ctx, conn, opts...)
}
