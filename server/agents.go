package server

import (
	"context"
	"net/http"
	"sort"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
)

func (s *Server) registerAgents() {
	huma.Register(s.api, huma.Operation{
		OperationID: "list-agents", Method: http.MethodGet, Path: "/v1/agents", Tags: []string{"agents"},
		Summary: "List the agents this server can start",
	}, func(ctx context.Context, _ *struct{}) (*struct{ Body api.Agents }, error) {
		out := api.Agents{Agents: []api.Agent{}}
		for _, a := range s.agents {
			d := a.Describe()
			out.Agents = append(out.Agents, api.Agent{Name: d.Name, Version: d.Version, Model: d.Model, Description: d.Description})
		}
		sort.Slice(out.Agents, func(i, j int) bool { return out.Agents[i].Name < out.Agents[j].Name })
		return &struct{ Body api.Agents }{out}, nil
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "get-agent", Method: http.MethodGet, Path: "/v1/agents/{name}", Tags: []string{"agents"},
		Summary:     "Show one agent's definition",
		Description: "The agent's model, tools, policy rules, limits, family budget and approvers. It never holds a secret: no model credentials or variables, no approver secrets.",
		Errors:      []int{http.StatusNotFound},
	}, func(ctx context.Context, in *struct {
		Name string `path:"name" maxLength:"64"`
	}) (*struct{ Body api.AgentDetail }, error) {
		a, ok := s.agents[in.Name]
		if !ok {
			return nil, api.NewProblem(api.TypeNotFound, "no such agent")
		}
		return &struct{ Body api.AgentDetail }{AgentDetail(a.Describe())}, nil
	})
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
