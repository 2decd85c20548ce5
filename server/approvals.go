package server

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/approval"
)

func (s *Server) registerApprovals() {
	huma.Register(s.api, huma.Operation{
		OperationID: "list-approvals", Method: http.MethodGet, Path: "/v1/approvals", Tags: []string{"approvals"},
		Summary: "List approval requests waiting for an answer, of the tenant or of one family",
		Errors:  []int{http.StatusNotFound},
	}, func(ctx context.Context, in *struct {
		RootID string `query:"root_id" maxLength:"128" doc:"Only this family: a root run and its sub-agents."`
		After  string `query:"after" maxLength:"512" doc:"The cursor the previous page returned."`
		Limit  int    `query:"limit" minimum:"1" maximum:"1000" default:"100"`
	}) (*struct{ Body api.ApprovalPage }, error) {
		page, next, err := s.scope(ctx).PendingApprovals(ctx, hitch.PendingApprovalsParams{
			RootID: in.RootID, After: in.After, Limit: in.Limit})
		if err != nil {
			return nil, s.fail("list approvals", err)
		}
		out := api.ApprovalPage{Approvals: []api.Approval{}, Next: next}
		for _, a := range page {
			out.Approvals = append(out.Approvals, wireApproval(a))
		}
		return &struct{ Body api.ApprovalPage }{out}, nil
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "get-approval", Method: http.MethodGet, Path: "/v1/runs/{id}/approvals/{call}", Tags: []string{"approvals"},
		Summary: "Show one approval request while it waits",
		Errors:  []int{http.StatusNotFound, http.StatusGone, http.StatusConflict},
	}, func(ctx context.Context, in *struct {
		ID   string `path:"id" maxLength:"128" doc:"The run's id."`
		Call string `path:"call" maxLength:"256" doc:"The call's id."`
	}) (*struct{ Body api.Approval }, error) {
		a, err := s.scope(ctx).ApprovalRequest(ctx, in.ID, in.Call)
		if err != nil {
			return nil, s.fail("show approval", err)
		}
		return &struct{ Body api.Approval }{wireApproval(a)}, nil
	})
	for _, approve := range []bool{true, false} {
		op, verb := "approve", "Approve"
		if !approve {
			op, verb = "reject", "Reject"
		}
		huma.Register(s.api, huma.Operation{
			OperationID: op + "-approval", Method: http.MethodPost, Path: "/v1/runs/{id}/approvals/{call}/" + op, Tags: []string{"approvals"},
			Summary: verb + " an approval request with an approver's credential (operator)",
			Description: "The credential in the body is checked against the run's agent's approvers for the request's requirement, " +
				"as `hitch approvals " + op + "` does; the policy is asked again before a grant takes effect.",
			Errors: []int{http.StatusNotFound, http.StatusGone, http.StatusConflict, http.StatusForbidden, http.StatusUnprocessableEntity},
		}, func(ctx context.Context, in *struct {
			ID   string `path:"id" maxLength:"128" doc:"The run's id."`
			Call string `path:"call" maxLength:"256" doc:"The call's id."`
			Body api.Answer
		}) (*runOut, error) {
			a := hitch.ApprovalAnswer{Approve: approve, Reason: in.Body.Reason,
				Credential: approval.Credential{Name: in.Body.Credential.Name, Secret: in.Body.Credential.Secret}}
			if err := s.scope(ctx).AnswerApproval(ctx, in.ID, in.Call, a); err != nil {
				return nil, s.fail(op, err)
			}
			return s.runAfter(ctx, in.ID)
		})
	}
}

func wireApproval(a hitch.PendingApproval) api.Approval {
	return api.Approval{RunID: a.RunID, RootID: a.RootID, Agent: a.Agent, Call: a.Call, Tool: a.Tool, Arguments: a.Arguments,
		Requirement: a.Requirement, Reason: a.Reason, Rule: a.Rule, ExpiresAt: a.ExpiresAt, Input: a.Input}
}
