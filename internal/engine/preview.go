package engine

import (
	"context"
	"fmt"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/hook"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/store"
)

// PreviewParams say what run a preview is of: what Start would be given,
// and for a session's next submission, the session's transcript.
type PreviewParams struct {
	Input, Instructions string
	// History is the transcript a session's submission starts from.
	History []model.Message
}

// Preview returns the first model request a run of a would send, built by
// the code a runner builds it with, from the first entry a start would
// journal (redacted as that is). Nothing is written, no model is called and
// no hook runs: a pre-generate hook that may add instructions is named in
// its own part instead.
func (e *Engine) Preview(ctx context.Context, a *Agent, p PreviewParams) (hitchtype.RequestPreview, error) {
	rs := a.started(StartParams{Input: p.Input, Instructions: p.Instructions})
	rs.History = p.History
	first := e.redact(entry(KindRunStarted, rs))
	st, err := fold([]store.Entry{{Pos: 1, Kind: first.Kind, Data: first.Data}})
	if err != nil {
		return hitchtype.RequestPreview{}, fmt.Errorf("preview %s: %w", a.Name, err)
	}
	r := &runner{e: e, agent: a, st: st, ctx: ctx, work: ctx}
	_, specs, _ := r.turnTools()
	// A first request is never the final, tool-free turn: that needs a
	// turn before it.
	req, lay := a.request(st, "", specs, false)
	pk, err := r.choose(req, nil)
	if err != nil {
		return hitchtype.RequestPreview{}, fmt.Errorf("preview %s: %w", a.Name, err)
	}
	window := pk.window(a.Limits.ContextWindow)
	acct := account(req, lay, st.summaryText(), window)
	out := hitchtype.RequestPreview{Agent: a.Name, Version: a.Version, Model: pk.model.Name(), Request: *req, Context: *acct,
		Compacts: window > 0 && float64(acct.Estimate) >= compactAt*float64(window)}
	out.Parts = previewParts(a, req, lay, len(st.history()))
	return out, nil
}

// previewParts splits a first request by layer: the instructions (the
// agent's, then the run's, then where hooks may add theirs), the
// transcript (the session's history, then the input), the tools and the
// answer's schema.
func previewParts(a *Agent, req *model.Request, lay layers, history int) []hitchtype.PreviewPart {
	var parts []hitchtype.PreviewPart
	add := func(layer, name, text string, n int) {
		parts = append(parts, hitchtype.PreviewPart{Layer: layer, Name: name, Text: text, Tokens: tokens(n)})
	}
	if lay.agent > 0 {
		add(hitchtype.LayerAgent, "", req.Instructions[:lay.agent], lay.agent)
	}
	if run := req.Instructions[lay.agent:]; run != "" {
		add(hitchtype.LayerRun, "", run, len(run))
	}
	switch l, ok := a.Hooks.(hook.Lister); {
	case ok:
		for _, h := range l.List() {
			if h.Point == "pre_generate" {
				add(hitchtype.LayerHook, h.Name, "may add instructions here when the run starts ("+h.Kind+" "+h.Target+")", 0)
			}
		}
	case a.Hooks != nil:
		add(hitchtype.LayerHook, "", "hooks written in Go may add instructions here when the run starts", 0)
	}
	for i, m := range req.Messages {
		layer := hitchtype.LayerInput
		if i < history {
			layer = hitchtype.LayerHistory
		}
		add(layer, string(m.Role), m.Text, messageBytes(m))
	}
	for _, t := range req.Tools {
		add(hitchtype.LayerTool, t.Name, t.Description, toolBytes(t))
	}
	if req.Answer != nil {
		add(hitchtype.LayerAnswer, req.Answer.Name, string(req.Answer.Schema), len(req.Answer.Name)+len(req.Answer.Schema))
	}
	return parts
}
