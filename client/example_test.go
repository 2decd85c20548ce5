package client_test

import (
	"context"
	"fmt"
	"os"

	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/client"
)

// Start a run and follow its journal to its end; the stream resumes by
// itself after a dropped connection.
func Example() {
	ctx := context.Background()
	c, err := client.New("http://127.0.0.1:7077", client.WithToken(os.Getenv("HITCH_TOKEN")))
	if err != nil {
		fmt.Println(err)
		return
	}
	started, err := c.StartRun(ctx, api.StartRun{Agent: "fixer", Input: "fix the typo in notes.txt", ID: "fix-1"})
	if err != nil {
		fmt.Println(err) // a *client.Error: its Type() is the problem type, Exit() the CLI's exit code
		return
	}
	for e, err := range c.Follow(ctx, started.Run.ID, 0) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(e.Pos, e.Kind)
	}
	run, err := c.Run(ctx, started.Run.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(run.Status, run.Outcome.Answer)
}
