package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/triggers"
)

// TestTriggerHooks: a config's pre_trigger command skips an occurrence it
// denies (the binding records the skip and its reason, and no run starts),
// fails closed when it crashes, and rewrites the input of one it lets go;
// the post_trigger command is given the run that occurrence started.
func TestTriggerHooks(t *testing.T) {
	t.Parallel()
	h := openHooks(t, map[string]string{
		"hitch.yaml": `store: hitch.db
models:
  m: {provider: scripted, script: script.yaml}
agents:
  - name: ops
    model: m
    policy: allow_all
    hooks:
      - {name: note, point: post_trigger, command: [./note.sh]}
      - {name: gate, point: pre_trigger, command: [./gate.sh]}
`,
		"script.yaml": "turns:\n  - text: done\n",
		"gate.sh": `#!/bin/sh
ev=$(cat)
case "$ev" in
  *holiday*) echo '{"action": "deny", "reason": "no work on holidays"}' ;;
  *crash*) echo 'broken' >&2; exit 1 ;;
  *) echo '{"action": "run", "input": "rewritten by the gate"}' ;;
esac
`,
		"note.sh": "#!/bin/sh\ncat >> \"$(dirname \"$0\")/posted.jsonl\"\necho >> \"$(dirname \"$0\")/posted.jsonl\"\n",
	}, nil)
	ctx := t.Context()
	at := time.Now().UTC().Truncate(time.Second)
	for id, input := range map[string]string{"rest": "the holiday check", "boom": "crash now", "work": "do the work"} {
		if _, _, err := h.rt.Triggers().Create(ctx, triggers.Spec{ID: id, At: at, Agent: "ops", Input: input}, triggers.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	for {
		n, err := h.rt.DispatchTriggers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	for id, why := range map[string]string{"rest": "no work on holidays (hook gate)", "boom": "hook gate failed, so the occurrence was skipped"} {
		tr, err := h.rt.Triggers().Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if tr.SkipCount != 1 || tr.FireCount != 0 || !strings.Contains(tr.SkipReason, why) || !tr.LastSkip.Equal(at) || tr.State != "done" {
			t.Errorf("%s: skipped %d fired %d at %v (%s): %q", id, tr.SkipCount, tr.FireCount, tr.LastSkip, tr.State, tr.SkipReason)
		}
		if _, err := h.st.RunGet(ctx, triggers.OccurrenceID(id, at)); err == nil {
			t.Errorf("%s: a skipped occurrence started a run", id)
		}
	}
	tr, err := h.rt.Triggers().Get(ctx, "work")
	if err != nil || tr.FireCount != 1 || tr.SkipCount != 0 {
		t.Fatalf("work: %v %+v", err, tr)
	}
	runID := triggers.OccurrenceID("work", at)
	var started struct {
		Input string `json:"input"`
	}
	if !entryOf(t, h.st, runID, "run.started", &started) || started.Input != "rewritten by the gate" {
		t.Errorf("the run started with %q, want the gate's rewrite", started.Input)
	}
	b, err := os.ReadFile(filepath.Join(h.dir, "posted.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var posted []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("post_trigger event %q: %v", line, err)
		}
		posted = append(posted, ev)
	}
	if len(posted) != 1 {
		t.Fatalf("post_trigger saw %d dispatches, want the one that ran: %s", len(posted), b)
	}
	trig, _ := posted[0]["trigger"].(map[string]any)
	if posted[0]["point"] != "post_trigger" || posted[0]["agent"] != "ops" || trig["run_id"] != runID || trig["id"] != "work" ||
		trig["input"] != "rewritten by the gate" {
		t.Errorf("post_trigger event: %s", b)
	}
}
