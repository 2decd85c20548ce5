package config

import (
	"context"
	"encoding/json"
	"iter"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch/internal/mcptest"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
)

func TestMain(m *testing.M) {
	mcptest.Main() // serves over stdio when this binary is started as an MCP server
	if dir := os.Getenv(releaseChildEnv); dir != "" {
		os.Exit(releaseChild(dir))
	}
	// The "recorded" provider plays a script like "scripted" and keeps
	// every request it is sent, under the key its model setting names.
	providers["recorded"] = func(m Model, configPath string, _ func(string) string) (model.Model, error) {
		inner, err := scripted.Load(relTo(configPath, m.Script))
		if err != nil {
			return nil, err
		}
		r := &recorder{Model: inner}
		recordersMu.Lock()
		r.hold = holds[m.Model]
		recorders[m.Model] = append(recorders[m.Model], r)
		recordersMu.Unlock()
		return r, nil
	}
	goleak.VerifyTestMain(m)
}

var (
	recordersMu sync.Mutex
	// recorders are the recorded models each Load built, by key.
	recorders = map[string][]*recorder{}
	// holds, by key, block a request until it returns false (or ctx ends).
	holds = map[string]func(ctx context.Context, n int) bool{}
)

// recorder keeps every request, as JSON, before its model sees it.
type recorder struct {
	model.Model
	hold func(ctx context.Context, n int) bool

	mu   sync.Mutex
	reqs [][]byte
}

func (r *recorder) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	b, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, b)
	n := len(r.reqs)
	r.mu.Unlock()
	if r.hold != nil && r.hold(ctx, n) {
		return func(yield func(*model.Chunk, error) bool) { yield(nil, ctx.Err()) }
	}
	return r.Model.Generate(ctx, req)
}

func (r *recorder) requests() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.reqs...)
}

func recorded(key string) []*recorder {
	recordersMu.Lock()
	defer recordersMu.Unlock()
	return append([]*recorder(nil), recorders[key]...)
}
