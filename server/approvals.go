package server

import (
	"context"
	"errors"
	"fmt"
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
		p := principalOf(ctx)
		if in.RootID != "" {
			if _, err := s.run(ctx, in.RootID); err != nil {
				return nil, err
			}
		}
		page, next, err := s.cfg.Runtime.PendingApprovals(ctx, hitch.PendingApprovalsParams{Tenant: p.tenant,
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
		if _, err := s.run(ctx, in.ID); err != nil {
			return nil, err
		}
		a, err := s.cfg.Runtime.ApprovalRequest(ctx, in.ID, in.Call)
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
			if err := need(ctx, api.RoleOperator); err != nil {
				return nil, err
			}
			if _, err := s.run(ctx, in.ID); err != nil {
				return nil, err
			}
			if err := s.answer(ctx, in.ID, in.Call, in.Body, approve); err != nil {
				return nil, err
			}
			run, err := s.run(ctx, in.ID)
			if err != nil {
				return nil, err
			}
			return &runOut{wireRun(run)}, nil
		})
	}
}

func (s *Server) answer(ctx context.Context, runID, call string, b api.Answer, approve bool) error {
	p, err := s.cfg.Runtime.ApprovalRequest(ctx, runID, call)
	if err != nil {
		return s.fail("answer", err)
	}
	approvers, err := s.cfg.Runtime.Approvers(ctx, runID)
	if err != nil {
		return s.fail("answer", err)
	}
	proof, err := approvers.Check(ctx, approval.Credential{Name: b.Credential.Name, Secret: b.Credential.Secret}, p.Requirement)
	if err != nil {
		if errors.Is(err, approval.ErrBadCredential) || errors.Is(err, approval.ErrOtherRequirement) {
			return api.NewProblem(api.TypeBadCredential, fmt.Sprintf("approver %s: %v", b.Credential.Name, err))
		}
		return s.fail("answer", err)
	}
	if approve {
		err = s.cfg.Runtime.Approve(ctx, runID, call, proof)
	} else {
		err = s.cfg.Runtime.Reject(ctx, runID, call, proof, b.Reason)
	}
	if err != nil {
		return s.fail("answer", err)
	}
	return nil
}

func wireApproval(a hitch.PendingApproval) api.Approval {
	return api.Approval{RunID: a.RunID, RootID: a.RootID, Agent: a.Agent, Call: a.Call, Tool: a.Tool, Arguments: a.Arguments,
		Requirement: a.Requirement, Reason: a.Reason, Rule: a.Rule, ExpiresAt: a.ExpiresAt, Input: a.Input}
}
