package hitch_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
)

// goApprovers are approvers written in Go that do not list themselves.
type goApprovers struct{ approval.Approvers }

func TestDescribe(t *testing.T) {
	t.Parallel()
	static, err := approval.NewStatic(approval.Member{Name: "ann", Secret: "ann-describe-secret", Requirements: []string{"deploy", "db:*"}})
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New("d", scripted.Script{})
	kid, err := hitch.Build(hitch.Spec{Name: "kid", Model: m, Policy: policy.DenyAll("kids only talk")})
	if err != nil {
		t.Fatal(err)
	}
	a, err := hitch.Build(hitch.Spec{
		Name: "boss", Version: 2, Model: m, Instructions: "lead", SubAgents: []*hitch.Agent{kid},
		Policy:    policy.Rules{{Name: "kids", Tools: []string{"kid"}, Verdict: policy.RequireApproval, Requirement: "deploy"}},
		Approvers: static, Budget: &hitch.Budget{USD: 1.5, WallTime: time.Minute},
		Limits: hitch.Limits{ModelAttempts: 3, ToolTimeout: hitch.Infinite},
	})
	if err != nil {
		t.Fatal(err)
	}
	d := a.Describe()
	if d.Name != "boss" || d.Version != 2 || d.Model != "scripted/d" || strings.Join(d.SubAgents, ",") != "kid" || d.Instructions != "lead" {
		t.Errorf("described %+v", d)
	}
	if d.Policy.Kind != "rules" || len(d.Policy.Rules) != 1 || d.Policy.Rules[0].Requirement != "deploy" {
		t.Errorf("policy %+v", d.Policy)
	}
	if d.ApproversKind != "listed" || len(d.Approvers) != 1 || d.Approvers[0].Name != "ann" || strings.Join(d.Approvers[0].Requirements, ",") != "deploy,db:*" {
		t.Errorf("approvers %s %+v", d.ApproversKind, d.Approvers)
	}
	if d.Limits.ModelAttempts != 3 || d.Limits.ToolTimeout != hitch.Infinite || d.Limits.PolicyTimeout != 5*time.Second {
		t.Errorf("limits %+v", d.Limits)
	}
	if d.Budget == nil || d.Budget.USD != 1.5 || d.Budget.WallTime != time.Minute {
		t.Errorf("budget %+v", d.Budget)
	}
	if b, _ := json.Marshal(d); strings.Contains(string(b), "ann-describe-secret") {
		t.Errorf("a description holds an approver's secret: %s", b)
	}
	if k := kid.Describe(); k.Policy.Kind != "deny_all" || k.Policy.Reason != "kids only talk" || k.ApproversKind != "none" {
		t.Errorf("kid %+v", k)
	}
	custom, err := hitch.Build(hitch.Spec{Name: "custom", Model: m, Approvers: goApprovers{static},
		Policy: policy.Func(func(context.Context, policy.Action) (policy.Decision, error) {
			return policy.Decision{Verdict: policy.Allow}, nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	if c := custom.Describe(); c.Policy.Kind != "go" || c.ApproversKind != "go" || c.Approvers != nil {
		t.Errorf("custom %+v", c)
	}
	if p := policy.AllowAll().(policy.Describer).Describe(); p.Kind != "allow_all" {
		t.Errorf("allow_all describes itself as %+v", p)
	}
}
