package server

import (
	"context"
	"sort"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
)

func (s *Server) listAgents(ctx context.Context, _ *struct{}) (*body[api.Agents], error) {
	out := api.Agents{Agents: []api.Agent{}}
	for _, a := range s.agents {
		d := a.Describe()
		out.Agents = append(out.Agents, api.Agent{Name: d.Name, Version: d.Version, Model: d.Model, Description: d.Description})
	}
	sort.Slice(out.Agents, func(i, j int) bool { return out.Agents[i].Name < out.Agents[j].Name })
	return &body[api.Agents]{out}, nil
}

func (s *Server) getAgent(ctx context.Context, in *struct {
	Name string `path:"name" maxLength:"64"`
}) (*body[api.AgentDetail], error) {
	a, ok := s.agents[in.Name]
	if !ok {
		return nil, api.NewProblem(api.TypeNotFound, "no such agent")
	}
	return &body[api.AgentDetail]{AgentDetail(a.Describe())}, nil
}

// AgentDetail speaks an agent's description as GET /v1/agents/{name}
// does, so `hitch agents show` prints the same locally as through a
// server. Only what Describe returns is copied: it holds no secret.
func AgentDetail(d hitch.AgentDescription) api.AgentDetail {
	out := api.AgentDetail{Name: d.Name, Version: d.Version, Description: d.Description, Model: d.Model, Instructions: d.Instructions,
		Tools: []api.AgentTool{}, SubAgents: []string{}, Answer: d.Answer, Workspace: d.Workspace, Hooks: d.Hooks,
		Policy:    api.AgentPolicy{Kind: d.Policy.Kind, Reason: d.Policy.Reason},
		Approvers: api.AgentApprovers{Kind: d.ApproversKind, Members: []api.AgentApprover{}}}
	for _, t := range d.Tools {
		wt := api.AgentTool{Name: t.Name, Description: t.Description, Parameters: t.Schema, Replay: t.Replay, External: t.External, FromSource: t.FromSource}
		if t.Timeout != 0 {
			wt.Timeout = duration(t.Timeout)
		}
		out.Tools = append(out.Tools, wt)
	}
	out.SubAgents = append(out.SubAgents, d.SubAgents...)
	out.HookList = []api.AgentHook{}
	for _, h := range d.HookList {
		out.HookList = append(out.HookList, api.AgentHook{Name: h.Name, Point: h.Point, Priority: h.Priority, OnError: h.OnError,
			Kind: h.Kind, Target: h.Target, Match: h.Match, When: h.When})
	}
	for _, r := range d.Policy.Rules {
		out.Policy.Rules = append(out.Policy.Rules, api.PolicyRule{Name: r.Name, Tools: append([]string{}, r.Tools...), When: r.When,
			Verdict: string(r.Verdict), Reason: r.Reason, Requirement: r.Requirement})
	}
	for _, m := range d.Approvers {
		out.Approvers.Members = append(out.Approvers.Members, api.AgentApprover{Name: m.Name, Requirements: append([]string{}, m.Requirements...)})
	}
	l := d.Limits
	out.Limits = api.AgentLimits{ModelAttempts: l.ModelAttempts, RetryDelay: duration(l.RetryDelay), MaxRetryAfter: duration(l.MaxRetryAfter),
		ModelTimeout: duration(l.ModelTimeout), PolicyTimeout: duration(l.PolicyTimeout), ToolTimeout: duration(l.ToolTimeout),
		ToolConcurrency: l.ToolConcurrency, MaxToolResult: l.MaxToolResult, CommandWait: duration(l.CommandWait),
		ApprovalExpiry: duration(l.ApprovalExpiry), AnswerAttempts: l.AnswerAttempts, MaxChildren: l.MaxChildren, MaxDepth: l.MaxDepth,
		MaxTokens: l.MaxTokens, FinalTurn: l.FinalTurn, ContextWindow: l.ContextWindow, KeepTurns: l.KeepTurns,
		ContinueOnUncertain: l.ContinueOnUncertain, MaxWait: duration(l.MaxWait), PendingCallTimeout: duration(l.PendingCallTimeout)}
	if b := d.Budget; b != nil {
		out.Budget = &api.Budget{Tokens: b.Tokens, USD: b.USD, ModelCalls: b.ModelCalls, ToolCalls: b.ToolCalls}
		if b.WallTime > 0 {
			out.Budget.WallTime = duration(b.WallTime)
		}
	}
	return out
}

// duration writes a limit as the config file does: a Go duration, or
// "infinite".
func duration(d time.Duration) string {
	if d == hitch.Infinite {
		return "infinite"
	}
	return d.String()
}

// previewInput is what GET /v1/agents/{name}/preview reads.
type previewInput struct {
	Name         string `path:"name" maxLength:"64"`
	Input        string `query:"input" maxLength:"65536" doc:"The user message the run would answer."`
	Instructions string `query:"instructions" maxLength:"65536" doc:"The caller's layer of instructions, as a start's instructions."`
	Session      string `query:"session" maxLength:"128" doc:"Preview the session's next submission: its transcript comes first. The session must be of the agent."`
}

func (s *Server) previewAgent(ctx context.Context, in *previewInput) (*body[api.AgentPreview], error) {
	a, ok := s.agents[in.Name]
	if !ok {
		return nil, api.NewProblem(api.TypeNotFound, "no such agent")
	}
	pv, err := s.scope(ctx).Preview(ctx, a, hitch.PreviewOptions{Input: in.Input, Instructions: in.Instructions, Session: in.Session})
	return reply(s, "preview", pv, err, AgentPreview)
}

// AgentPreview speaks a preview as GET /v1/agents/{name}/preview does, so
// `hitch agents preview` prints the same locally as through a server.
func AgentPreview(pv hitch.RequestPreview) api.AgentPreview {
	out := api.AgentPreview{Agent: pv.Agent, Version: pv.Version, Model: pv.Model, Instructions: pv.Request.Instructions,
		Messages: []api.PreviewMessage{}, Tools: []api.PreviewTool{}, Parts: []api.PreviewPart{}, Compacts: pv.Compacts,
		Context: wireContextAccount(pv.Context)}
	for _, m := range pv.Request.Messages {
		wm := api.PreviewMessage{Role: string(m.Role), Text: m.Text, ToolCallID: m.ToolCallID, ToolName: m.ToolName, IsError: m.IsError}
		for _, tc := range m.ToolCalls {
			wm.ToolCalls = append(wm.ToolCalls, api.PreviewToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
		}
		out.Messages = append(out.Messages, wm)
	}
	for _, t := range pv.Request.Tools {
		out.Tools = append(out.Tools, api.PreviewTool{Name: t.Name, Description: t.Description, Parameters: t.Schema})
	}
	if pv.Request.Answer != nil {
		out.Answer = pv.Request.Answer.Schema
	}
	for _, p := range pv.Parts {
		out.Parts = append(out.Parts, api.PreviewPart{Layer: p.Layer, Name: p.Name, Text: p.Text, Tokens: p.Tokens})
	}
	return out
}
