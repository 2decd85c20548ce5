package hitch_test

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
)

// recorder remembers every request a model was sent.
type recorder struct {
	model.Model
	mu   sync.Mutex
	reqs []*model.Request
}

func (r *recorder) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.Model.Generate(ctx, req)
}

type verdict struct {
	Label string  `json:"label"`
	Score float64 `json:"score"`
}

func TestTypedAnswer(t *testing.T) {
	t.Parallel()
	m := &recorder{Model: scripted.New("typed", scripted.Script{Turns: []scripted.Turn{
		{Text: "```json\n{\"label\": \"spam\", \"score\": 0.9}\n```"},
	}})}
	a := build(t, hitch.Spec{Model: m, Answer: hitch.AnswerOf[verdict]()})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "classify")
	v, err := hitch.DecodeAnswer[verdict](run)
	if err != nil || v.Label != "spam" || v.Score != 0.9 {
		t.Fatalf("answer %+v, %v (outcome %+v)", v, err, run.Outcome)
	}
	if req := m.reqs[0]; req.Answer == nil || !strings.Contains(string(req.Answer.Schema), `"label"`) {
		t.Errorf("the model was not asked for the schema: %+v", req.Answer)
	}
}

func TestRefusedAnswerGetsACorrectiveTurn(t *testing.T) {
	t.Parallel()
	m := &recorder{Model: scripted.New("typed", scripted.Script{Turns: []scripted.Turn{
		{Text: "it is spam"},
		{Text: `{"label": "spam", "score": 0.5}`},
	}})}
	a := build(t, hitch.Spec{Model: m, Answer: hitch.AnswerOf[verdict]()})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "classify")
	if run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != `{"label":"spam","score":0.5}` || run.Outcome.Attempts != 2 {
		t.Fatalf("status %s, outcome %+v", run.Status, run.Outcome)
	}
	second := m.reqs[1].Messages
	last := second[len(second)-1]
	if last.Role != model.RoleUser || !strings.Contains(last.Text, "refused: the answer is not JSON") || !strings.Contains(last.Text, `"score"`) {
		t.Errorf("correction = %+v", last)
	}
	if second[len(second)-2].Text != "it is spam" {
		t.Errorf("the refused text is not kept in the transcript: %+v", second)
	}
	if !strings.Contains(kinds(journal(t, rt, run.ID)), "answer.refused") {
		t.Error("the refusal is not journaled")
	}
}

func TestAnswerInvalidAfterTheAttempts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		attempts, replies int
	}{{1, 1}, {2, 2}, {3, 3}} {
		m := scripted.New("typed", scripted.Script{Repeat: true, Turns: []scripted.Turn{{Text: `{"label": 7}`}}})
		a := build(t, hitch.Spec{Model: m, Answer: hitch.AnswerOf[verdict](), Limits: hitch.Limits{AnswerAttempts: tc.attempts}})
		rt, _ := setup(t, a)
		run := runToRest(t, rt, a, "classify")
		if run.Status != hitchtype.StatusAnswerInvalid || run.Outcome.Raw != `{"label": 7}` || !strings.Contains(run.Outcome.Error, "does not match the schema") {
			t.Fatalf("attempts %d: status %s, outcome %+v", tc.attempts, run.Status, run.Outcome)
		}
		if run.Outcome.Attempts != tc.replies {
			t.Errorf("attempts %d: %d model calls, want %d", tc.attempts, run.Outcome.Attempts, tc.replies)
		}
	}
}

func TestNonObjectAnswerIsWrapped(t *testing.T) {
	t.Parallel()
	m := &recorder{Model: scripted.New("list", scripted.Script{Turns: []scripted.Turn{{Text: `{"answer": ["a", "b"]}`}}})}
	a := build(t, hitch.Spec{Model: m, Answer: hitch.AnswerSchema(json.RawMessage(`{"type": "array", "items": {"type": "string"}}`))})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "list")
	got, err := hitch.DecodeAnswer[[]string](run)
	if err != nil || len(got) != 2 || got[1] != "b" {
		t.Fatalf("answer %v, %v, outcome %+v", got, err, run.Outcome)
	}
	if s := string(m.reqs[0].Answer.Schema); !strings.Contains(s, `"required":["answer"]`) {
		t.Errorf("the provider schema is not wrapped: %s", s)
	}
}

func TestBuildRefusesABadAnswer(t *testing.T) {
	t.Parallel()
	m := scripted.New("x", scripted.Script{Turns: []scripted.Turn{{Text: "x"}}})
	for _, ans := range []*hitch.Answer{hitch.AnswerSchema(nil), hitch.AnswerSchema(json.RawMessage(`{"type": 5}`)), hitch.AnswerOf[chan int]()} {
		_, err := hitch.Build(hitch.Spec{Name: "x", Model: m, Policy: nil, Answer: ans, Limits: hitch.Limits{AnswerAttempts: 101}})
		if err == nil || !strings.Contains(err.Error(), "Answer:") || !strings.Contains(err.Error(), "Limits.AnswerAttempts: 101: want 1–100") {
			t.Errorf("build with a bad answer: %v", err)
		}
	}
}

func TestCallerInstructionsAreLaidOverTheAgents(t *testing.T) {
	t.Parallel()
	m := &recorder{Model: scripted.New("i", scripted.Script{Turns: []scripted.Turn{{Text: "ok"}}})}
	a := build(t, hitch.Spec{Model: m, Instructions: "Answer in English."})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "hello", hitch.WithInstructions("Answer in French."))
	got := m.reqs[0].Instructions
	if run.Status != hitchtype.StatusCompleted || !strings.HasPrefix(got, "Answer in English.") || !strings.HasSuffix(got, "Answer in French.") || !strings.Contains(got, "precedence") {
		t.Fatalf("instructions %q", got)
	}
	if !strings.Contains(string(journal(t, rt, run.ID)[0].Data), "Answer in French.") {
		t.Error("the caller's instructions are not journaled with the run")
	}
}
