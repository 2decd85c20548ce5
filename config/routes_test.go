package config

import (
	"slices"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/route"
)

func TestLoadRoute(t *testing.T) {
	t.Parallel()
	path := write(t, map[string]string{"script.yaml": script, "hitch.yaml": `
models:
  primary: {provider: openai, model: gpt-4o-mini, base_url: "http://127.0.0.1:1/v1"}
  backup:  {provider: anthropic, model: claude-sonnet-4-5, base_url: "http://127.0.0.1:1"}
  small:   {provider: scripted, script: script.yaml}
routes:
  main:
    models: [primary, backup, small]
    cool_down: 2m
    per_model:
      primary: {move_on: [unavailable, overloaded], attempts: 2, timeout: 30s}
      small: {tools: false, structured_output: false, context_window: 8000}
agents:
  - {name: a, model: main, policy: allow_all}
  - {name: b, model: main, policy: allow_all}
  - {name: c, model: primary, policy: allow_all}
`})
	cfg, err := Load(path, Options{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	r := cfg.Routes["main"]
	if r == nil || r.Name() != "route/main" {
		t.Fatalf("routes %v", cfg.Routes)
	}
	a, _ := cfg.Agent("a")
	b, _ := cfg.Agent("b")
	c, _ := cfg.Agent("c")
	if a.Describe().Model != "route/main" || b.Describe().Model != "route/main" || c.Describe().Model != "openai/gpt-4o-mini" {
		t.Errorf("agents' models: %s %s %s", a.Describe().Model, b.Describe().Model, c.Describe().Model)
	}
	ms := r.Members()
	if len(ms) != 3 || ms[0].Model != cfg.Models["primary"] || ms[1].Model != cfg.Models["backup"] {
		t.Fatalf("members %+v", ms)
	}
	if !slices.Equal(ms[0].MoveOn, []model.Kind{model.KindUnreachable, model.KindOverloaded}) || ms[0].Attempts != 2 || ms[0].Timeout != 30*time.Second {
		t.Errorf("primary %+v", ms[0])
	}
	if !slices.Equal(ms[1].MoveOn, route.DefaultMoveOn) || ms[1].Attempts != 1 || ms[1].NoTools {
		t.Errorf("backup %+v", ms[1])
	}
	if !ms[2].NoTools || !ms[2].NoAnswer || ms[2].Window != 8000 {
		t.Errorf("small %+v", ms[2])
	}
}

// TestRouteProblems: every problem of the routes section at once, each
// naming the file, the line and the field.
func TestRouteProblems(t *testing.T) {
	t.Parallel()
	refused(t, onDemo(`  main: {provider: scripted, script: script.yaml}
routes:
  main:
    models: [demo]
  loop:
    models: [demo, demo, other, empty]
    cool_down: soon
    per_model:
      demo: {move_on: [unauthorized, sideways], attempts: 0, timeout: later, context_window: 0}
      nobody: {attempts: 2}
  empty:
    models: []
    cool_down: 0s
agents:
  - {name: a, model: nowhere, policy: allow_all}
`),
		`:7: routes.main: "main" is also the name of a model`,
		`:9: routes.loop.models[1]: "demo" is already models[0]`,
		`:9: routes.loop.models[2]: "other" is not declared under models`,
		`:9: routes.loop.models[3]: "empty" is a route`,
		`:10: routes.loop.cool_down: "soon" is not a duration`,
		`:12: routes.loop.per_model.demo.move_on[0]: "unauthorized" never moves on`,
		`:12: routes.loop.per_model.demo.move_on[1]: "sideways" is not a failure class`,
		`:12: routes.loop.per_model.demo.attempts: 0: want 1–100`,
		`:12: routes.loop.per_model.demo.timeout: "later" is not a duration`,
		`:12: routes.loop.per_model.demo.context_window: 0: want a window in tokens`,
		`:13: routes.loop.per_model.nobody: "nobody" is not one of this route's models`,
		`:15: routes.empty.models: is empty`,
		`:16: routes.empty.cool_down: "0s": want 1s to 24h, or off`,
		`:18: agents[0].model: "nowhere" is not declared under models`,
	)
}
