package server

import (
	"context"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/approval"
)

func (s *Server) listApprovals(ctx context.Context, in *struct {
	RootID string `query:"root_id" maxLength:"128" doc:"Only this family: a root run and its sub-agents."`
	After  string `query:"after" maxLength:"512" doc:"The cursor the previous page returned."`
	Limit  int    `query:"limit" minimum:"1" maximum:"1000" default:"100"`
}) (*body[api.ApprovalPage], error) {
	page, next, err := s.scope(ctx).PendingApprovals(ctx, hitch.PendingApprovalsParams{
		RootID: in.RootID, After: in.After, Limit: in.Limit})
	if err != nil {
		return nil, s.fail("list approvals", err)
	}
	out := api.ApprovalPage{Approvals: []api.Approval{}, Next: next}
	for _, a := range page {
		out.Approvals = append(out.Approvals, wireApproval(a))
	}
	return &body[api.ApprovalPage]{out}, nil
}

func (s *Server) getApproval(ctx context.Context, in *callPath) (*body[api.Approval], error) {
	a, err := s.scope(ctx).ApprovalRequest(ctx, in.ID, in.Call)
	return reply(s, "show approval", a, err, wireApproval)
}

type answerIn struct {
	ID   string `path:"id" maxLength:"128" doc:"The run's id."`
	Call string `path:"call" maxLength:"256" doc:"The call's id."`
	Body api.Answer
}

// answerApproval approves, or rejects, an approval request.
func (s *Server) answerApproval(op string, approve bool) func(context.Context, *answerIn) (*body[api.Run], error) {
	return func(ctx context.Context, in *answerIn) (*body[api.Run], error) {
		a := hitch.ApprovalAnswer{Approve: approve, Reason: in.Body.Reason,
			Credential: approval.Credential{Name: in.Body.Credential.Name, Secret: in.Body.Credential.Secret}}
		if err := s.scope(ctx).AnswerApproval(ctx, in.ID, in.Call, a); err != nil {
			return nil, s.fail(op, err)
		}
		return s.runAfter(ctx, in.ID)
	}
}

func wireApproval(a hitch.PendingApproval) api.Approval {
	return api.Approval{RunID: a.RunID, RootID: a.RootID, Agent: a.Agent, Call: a.Call, Tool: a.Tool, Arguments: a.Arguments,
		Requirement: a.Requirement, Reason: a.Reason, Rule: a.Rule, ExpiresAt: a.ExpiresAt, Input: a.Input}
}
