package nodetest

import (
	"context"
	"fmt"
	"iter"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/internal/pgtest"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store/postgres"
)

// firstRequests tells, for each request a model gets, the run's input (the
// first user message) and when the request came.
type firstRequests struct {
	model.Model
	seen chan request
}

type request struct {
	input string
	at    time.Time
}

func (m firstRequests) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	for _, msg := range req.Messages {
		if msg.Role == model.RoleUser {
			select {
			case m.seen <- request{msg.Text, time.Now()}:
			default:
			}
			break
		}
	}
	return m.Model.Generate(ctx, req)
}

// wakeSamples is how many starts TestStartOnOneNodeWakesAnother times;
// HITCH_WAKE_SAMPLES overrides it (the benchmark figures use more).
func wakeSamples() int {
	if n, err := strconv.Atoi(os.Getenv("HITCH_WAKE_SAMPLES")); err == nil && n > 0 {
		return n
	}
	return 20
}

// TestStartOnOneNodeWakesAnother: a run started detached on node A is
// claimed by node B at once, although B looks for due runs only every ten
// minutes (its sweeper and its store's poll both): only the notification
// can explain a quick claim. It logs the time from the start on A to the
// first model request on B.
func TestStartOnOneNodeWakesAnother(t *testing.T) {
	url, schema := pgtest.URL(t), newSchema(t)
	const poll = 10 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	seen := make(chan request, 16)
	m := firstRequests{Model: scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "done"}}}), seen: seen}
	a, err := hitch.Build(hitch.Spec{Name: "waker", Model: m, Policy: policy.AllowAll()})
	if err != nil {
		t.Fatal(err)
	}
	stA := openStore(t, url, schema)
	rtA, err := hitch.Open(hitch.Config{Store: stA, Agents: []*hitch.Agent{a}, Node: "A"})
	if err != nil {
		t.Fatal(err)
	}
	defer rtA.Close(context.Background())
	stB := openStore(t, url, schema, postgres.WithPollInterval(poll))
	rtB, err := hitch.Open(hitch.Config{Store: stB, Agents: []*hitch.Agent{a}, Node: "B"})
	if err != nil {
		t.Fatal(err)
	}
	sweepCtx, stopSweep := context.WithCancel(ctx)
	swept := make(chan error, 1)
	go func() { swept <- rtB.Sweep(sweepCtx, poll) }()
	defer func() {
		stopSweep()
		<-swept
		rtB.Close(context.Background())
	}()

	// The first start is claimed by B's first pass or its first wake;
	// once B has it, B's next pass is ten minutes away.
	start := func(id string) time.Time {
		t.Helper()
		at := time.Now()
		if _, err := rtA.Start(ctx, a, id, hitch.WithID(id), hitch.Detached()); err != nil {
			t.Fatal(err)
		}
		return at
	}
	waitFor := func(id string) time.Time {
		t.Helper()
		for {
			select {
			case r := <-seen:
				if r.input == id {
					return r.at
				}
			case <-ctx.Done():
				t.Fatalf("node B never asked the model for %s", id)
			}
		}
	}
	start("warm-up")
	waitFor("warm-up")
	if _, err := rtB.Await(ctx, "warm-up"); err != nil {
		t.Fatal(err)
	}

	n := wakeSamples()
	lat := make([]time.Duration, 0, n)
	for i := range n {
		id := fmt.Sprintf("wake-%d", i)
		at := start(id)
		got := waitFor(id)
		lat = append(lat, got.Sub(at))
		if run, err := rtB.Await(ctx, id); err != nil || run.Status != "completed" {
			t.Fatalf("%s on B: %+v %v", id, run, err)
		}
	}
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	t.Logf("start on A to first model request on B, %d starts: p50 %s, p99 %s, max %s", n, p(0.50), p(0.99), lat[len(lat)-1])
	if worst := lat[len(lat)-1]; worst > poll/20 {
		t.Errorf("a start took %s to reach node B: a poll (%s), not a notification", worst, poll)
	}
}
