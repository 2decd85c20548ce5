package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/server"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// heldModel holds the call of the run whose input is "hold" until its gate
// is closed.
type heldModel struct {
	model.Model
	entered chan<- struct{}
	gate    <-chan struct{}
}

func (m heldModel) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	if len(req.Messages) > 0 && req.Messages[0].Text == "hold" {
		m.entered <- struct{}{}
		select {
		case <-m.gate:
		case <-ctx.Done():
		}
	}
	return m.Model.Generate(ctx, req)
}

// TestStartOnAFullNodeAnswersAtOnce: with one runner slot, held by a run
// whose model call does not return, POST /v1/runs answers 201 with the new
// run queued instead of waiting for the slot; the run completes once the
// slot frees, driven by the node's sweeper.
func TestStartOnAFullNodeAnswersAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	entered, gate := make(chan struct{}, 1), make(chan struct{})
	a, err := hitch.Build(hitch.Spec{Name: "echo", Policy: policy.AllowAll(),
		Model: heldModel{Model: scripted.New("echo", scripted.Script{Turns: []scripted.Turn{{Text: "echoed"}}}), entered: entered, gate: gate}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{a}, MaxRunners: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	s, err := server.New(server.Config{Runtime: rt, Store: st, Agents: []*hitch.Agent{a},
		Tokens: []server.Token{{Name: "admin", Tenant: "default", Role: api.RoleAdmin, Hash: server.HashToken(tokAdmin)}}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	sweepCtx, stopSweep := context.WithCancel(ctx)
	swept := make(chan error, 1)
	go func() { swept <- rt.Sweep(sweepCtx, time.Hour) }() // only a freed slot can drive the run in time
	defer func() { stopSweep(); <-swept }()

	// A client that gives up long before the server's request timeout: a
	// start that waited for the slot would fail here.
	hc := &http.Client{Timeout: 10 * time.Second}
	start := func(id, input string) api.StartedRun {
		t.Helper()
		body, _ := json.Marshal(api.StartRun{Agent: "echo", Input: input, ID: id})
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/runs", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tokAdmin)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
		defer resp.Body.Close()
		var got api.StartedRun
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("start %s: %d %v", id, resp.StatusCode, err)
		}
		return got
	}
	start("held", "hold")
	<-entered // the node's only slot is taken
	got := start("second", "go")
	if got.Run.Status != "queued" || !got.Created {
		t.Fatalf("start on a full node: %+v, want the run created queued", got)
	}
	raw, err := st.RunGet(ctx, "second")
	if err != nil {
		t.Fatal(err)
	}
	if raw.LeaseOwner != "" || raw.LeaseToken != 0 {
		t.Fatalf("the start leased a run it had no slot for: %+v", raw)
	}
	close(gate)
	c := &client{t: t, url: ts.URL, token: tokAdmin}
	if r := wait(t, c, "second"); r.Status != "completed" {
		t.Fatalf("the queued run ended %s", r.Status)
	}
}
