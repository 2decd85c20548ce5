package hitch_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/tool"
)

// samePreview fails unless the preview's request is the one the model was
// sent: instructions, each message, each tool and the answer's schema.
func samePreview(t *testing.T, pv hitch.RequestPreview, sent *model.Request) {
	t.Helper()
	if pv.Request.Instructions != sent.Instructions {
		t.Errorf("instructions:\npreview %q\nsent    %q", pv.Request.Instructions, sent.Instructions)
	}
	if len(pv.Request.Messages) != len(sent.Messages) {
		t.Errorf("preview has %d messages, the run sent %d:\n%+v\n%+v", len(pv.Request.Messages), len(sent.Messages), pv.Request.Messages, sent.Messages)
	}
	for i := range min(len(pv.Request.Messages), len(sent.Messages)) {
		if !reflect.DeepEqual(pv.Request.Messages[i], sent.Messages[i]) {
			t.Errorf("message %d:\npreview %+v\nsent    %+v", i, pv.Request.Messages[i], sent.Messages[i])
		}
	}
	if !reflect.DeepEqual(pv.Request.Tools, sent.Tools) || !reflect.DeepEqual(pv.Request.Answer, sent.Answer) {
		t.Errorf("tools or answer:\npreview %+v %+v\nsent    %+v %+v", pv.Request.Tools, pv.Request.Answer, sent.Tools, sent.Answer)
	}
}

func layersOf(pv hitch.RequestPreview) []string {
	var out []string
	for _, p := range pv.Parts {
		if len(out) == 0 || out[len(out)-1] != p.Layer {
			out = append(out, p.Layer)
		}
	}
	return out
}

// TestPreviewIsTheFirstRequest: a preview asks the model nothing, and the
// request it shows is the one a run of the same agent then sends, with
// each part labelled by its layer and estimated against the window.
func TestPreviewIsTheFirstRequest(t *testing.T) {
	t.Parallel()
	m := &recorder{Model: scripted.New("p", scripted.Script{Turns: []scripted.Turn{{Text: `{"label": "ham", "score": 0.1}`}}})}
	a := build(t, hitch.Spec{Model: m, Instructions: "Classify the message.", Tools: []tool.Tool{addTool(t, nil)},
		Answer: hitch.AnswerOf[verdict](), Limits: hitch.Limits{ContextWindow: 4000}})
	rt, _ := setup(t, a)
	pv, err := rt.Preview(t.Context(), a, hitch.PreviewOptions{Input: "win a prize", Instructions: "Be strict."})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.reqs) != 0 {
		t.Fatalf("the preview sent %d model requests", len(m.reqs))
	}
	want := []string{hitchtype.LayerAgent, hitchtype.LayerRun, hitchtype.LayerInput, hitchtype.LayerTool, hitchtype.LayerAnswer}
	if got := layersOf(pv); !reflect.DeepEqual(got, want) {
		t.Errorf("layers %v, want %v", got, want)
	}
	var sum int64
	for _, p := range pv.Parts {
		if p.Tokens <= 0 {
			t.Errorf("part %+v has no estimate", p)
		}
		sum += p.Tokens
	}
	if pv.Context.Window != 4000 || pv.Context.Estimate <= 0 || sum < pv.Context.Estimate-int64(len(pv.Parts)) || sum > pv.Context.Estimate+int64(len(pv.Parts)) {
		t.Errorf("context %+v, parts sum to %d", pv.Context, sum)
	}
	if pv.Model != "scripted/p" || pv.Agent != "tester" {
		t.Errorf("preview of %s on %s", pv.Agent, pv.Model)
	}
	run := runToRest(t, rt, a, "win a prize", hitch.WithInstructions("Be strict."))
	if run.Status != hitchtype.StatusCompleted || len(m.reqs) != 1 {
		t.Fatalf("run %s after %d requests", run.Status, len(m.reqs))
	}
	samePreview(t, pv, m.reqs[0])
}

// TestPreviewOfASessionsNextSubmission: with a session, the preview's
// messages start with the session's transcript, as the next submission's
// first request does; a session of another agent is refused.
func TestPreviewOfASessionsNextSubmission(t *testing.T) {
	t.Parallel()
	m := &recorder{Model: scripted.New("s", scripted.Script{Repeat: true, Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Name: "add", Args: `{"a": 1, "b": 2}`}}}, {Text: "three"}, {Text: "noted"},
	}})}
	a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{addTool(t, nil)}})
	other := build(t, hitch.Spec{Name: "other", Model: m})
	rt, _ := setup(t, a, other)
	ses := openSession(t, rt, a, "chat")
	for _, text := range []string{"add 1 and 2", "remember it"} {
		if _, err := rt.Sessions().Send(t.Context(), ses.ID, text, sessions.SendOptions{}); err != nil {
			t.Fatal(err)
		}
		awaitSession(t, rt, ses.ID)
	}
	m.mu.Lock()
	before := len(m.reqs)
	m.mu.Unlock()
	pv, err := rt.Preview(t.Context(), a, hitch.PreviewOptions{Session: ses.ID, Input: "what was it?"})
	if err != nil {
		t.Fatal(err)
	}
	if got := layersOf(pv); !reflect.DeepEqual(got, []string{hitchtype.LayerHistory, hitchtype.LayerInput, hitchtype.LayerTool}) {
		t.Errorf("layers %v", got)
	}
	if _, err := rt.Sessions().Send(t.Context(), ses.ID, "what was it?", sessions.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitSession(t, rt, ses.ID)
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.reqs) != before+1 {
		t.Fatalf("%d requests after the preview, want the submission's one", len(m.reqs)-before)
	}
	samePreview(t, pv, m.reqs[before])

	if _, err := rt.Preview(t.Context(), other, hitch.PreviewOptions{Session: ses.ID}); !errors.Is(err, sessions.ErrAgent) {
		t.Errorf("a session of another agent: %v", err)
	}
	if _, err := rt.Preview(t.Context(), a, hitch.PreviewOptions{Session: "nope"}); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("no such session: %v", err)
	}
}
