package config

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/internal/hitchtest"
)

// BenchmarkLoad300Agents loads a file of 300 agents, half of them with a
// command tool: one op is one Load.
func BenchmarkLoad300Agents(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("models:\n  demo: {provider: scripted, script: script.yaml}\nagents:\n")
	for i := range 300 {
		tools := "[read, write]"
		if i%2 == 0 {
			tools = "[read, bash]"
		}
		fmt.Fprintf(&sb, "  - name: agent%03d\n    model: demo\n    tools: %s\n    policy: allow_all\n", i, tools)
	}
	path := write(b, map[string]string{"script.yaml": script, "hitch.yaml": sb.String()})
	for b.Loop() {
		cfg, err := Load(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		cfg.Close()
	}
}

// BenchmarkConfigAgentRuns starts runs of an agent defined in a file, whose
// tools run no command (so its runs need no command sandbox), 64 at a time
// on SQLite at FULL, each awaited to its end: runs/s is the rate.
func BenchmarkConfigAgentRuns(b *testing.B) {
	path := write(b, onDemo(`agents:
  - name: files
    model: demo
    tools: [read, write, edit, glob]
    policy: allow_all
`))
	cfg, err := Load(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cfg.Close() })
	const workers = 64
	rt, _ := hitchtest.New(b, hitch.Config{Agents: cfg.Agents, MaxRunners: workers})
	agent := cfg.Agents[0]
	ctx := context.Background()
	var next atomic.Int64
	start := time.Now()
	b.ResetTimer()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				res, err := rt.Start(ctx, agent, "hello")
				if err == nil {
					_, err = rt.Await(ctx, res.Run.ID)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
}
