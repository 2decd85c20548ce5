package hitch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/tool"
)

// A run of an agent with one typed tool, on an embedded SQLite store. The
// scripted model stands in for a real one.
func Example() {
	ctx := context.Background()
	add := tool.MustNew("add", "Adds two integers.", func(_ context.Context, in struct{ A, B int }) (int, error) {
		return in.A + in.B, nil
	})
	m := scripted.New("calc", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Name: "add", Args: `{"A": 2, "B": 3}`}}},
		{Text: "2 + 3 = 5"},
	}})
	agent, err := hitch.Build(hitch.Spec{Name: "calc", Model: m, Tools: []tool.Tool{add}, Policy: policy.AllowAll()})
	if err != nil {
		panic(err)
	}
	dir, _ := os.MkdirTemp("", "hitch-example-")
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "hitch.db"))
	if err != nil {
		panic(err)
	}
	defer st.Close()
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{agent}})
	if err != nil {
		panic(err)
	}
	defer rt.Close(ctx)

	res, err := rt.Start(ctx, agent, "What is 2+3?", hitch.WithID("job-42"))
	if err != nil {
		panic(err)
	}
	run, err := rt.Await(ctx, res.Run.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(run.Status, run.Outcome.Answer)

	again, _ := rt.Start(ctx, agent, "What is 2+3?", hitch.WithID("job-42"))
	fmt.Println("second start created a run:", again.Created, "same input:", again.SameInput)
	// Output:
	// completed 2 + 3 = 5
	// second start created a run: false same input: true
}

// Build reports every problem of a definition at once, each naming its
// field and the allowed range.
func ExampleBuild() {
	_, err := hitch.Build(hitch.Spec{Name: "x", Limits: hitch.Limits{ToolConcurrency: 99}})
	fmt.Println(err)
	// Output:
	// Model: is required; Policy: is required: there is no implicit allow (policy.AllowAll is the explicit one); Limits.ToolConcurrency: 99: want 1–64
}
