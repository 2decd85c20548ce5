package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/model/modeltest"
)

// TestModelsCheckRoute: a route's models are listed in order, each with
// its check and the breaker it would have: the one that answered 503 is
// passed over for the cool-down.
func TestModelsCheckRoute(t *testing.T) {
	t.Parallel()
	busy := modeltest.Exchange{Status: 503, Body: `{"error":{"message":"The server is overloaded","type":"server_error"}}`}
	srv := modeltest.NewServer(t, busy, busy)
	_, cfg := writeConfig(t, "models:\n"+
		"  primary: {provider: openai, model: gpt-4o-mini, base_url: \""+srv.URL+"/v1\"}\n"+
		"  backup: {provider: scripted, script: script.yaml}\n"+
		"routes:\n  main: {models: [primary, backup], cool_down: 2m}\n"+
		"agents:\n  - {name: a, model: main, policy: allow_all}\n",
		"turns:\n  - text: OK\n")
	code, out, errOut := cli(t, "models", "check", "--config", cfg)
	if code != exitError {
		t.Fatalf("exit %d, want %d (a model failed)\n%s%s", code, exitError, out, errOut)
	}
	for _, want := range []string{
		"route main (route/main), asked in this order:",
		"1. openai/gpt-4o-mini",
		"failed  breaker open after overloaded: passed over until ",
		"2. scripted/script",
		"ok      breaker closed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}

	code, out, _ = cli(t, "models", "check", "--config", cfg, "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var r struct {
		Route  string
		Models []struct{ Model, Result, Breaker, Kind string }
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil || code != exitError {
		t.Fatalf("exit %d, last line %q: %v", code, lines[len(lines)-1], err)
	}
	if r.Route != "main" || len(r.Models) != 2 || r.Models[0].Breaker != "open" || r.Models[0].Kind != "overloaded" || r.Models[1].Breaker != "closed" {
		t.Errorf("route report %+v", r)
	}
}
