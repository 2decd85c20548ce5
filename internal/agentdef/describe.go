package agentdef

import (
	"slices"
	"sort"

	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/hook"
	"github.com/hitch-dev/hitch/policy"
)

// Describe says what a built definition holds, without secrets: d with
// its version and limits defaulted, and the agent's approvers.
func Describe(d Def, approvers approval.Approvers) hitchtype.AgentDescription {
	desc := hitchtype.AgentDescription{Name: d.Name, Version: d.Version, Description: d.Description, Instructions: d.Instructions,
		Limits: d.Limits, Workspace: d.Workspace != nil, Hooks: d.Hooks != nil}
	if l, ok := d.Hooks.(hook.Lister); ok {
		desc.HookList = l.List()
	}
	if d.Model != nil {
		desc.Model = d.Model.Name()
	}
	seen := map[string]bool{}
	for _, t := range d.Tools {
		info := t.Info()
		seen[info.Name] = true
		desc.Tools = append(desc.Tools, hitchtype.ToolDescription{Info: info})
	}
	var sourced []hitchtype.ToolDescription
	for _, src := range d.ToolSources {
		for _, t := range src.Tools() {
			info := t.Info()
			if seen[info.Name] {
				continue
			}
			seen[info.Name] = true
			sourced = append(sourced, hitchtype.ToolDescription{Info: info, FromSource: true})
		}
	}
	sort.Slice(sourced, func(i, j int) bool { return sourced[i].Name < sourced[j].Name })
	desc.Tools = append(desc.Tools, sourced...)
	for _, c := range d.SubAgents {
		desc.SubAgents = append(desc.SubAgents, c.Name)
	}
	desc.Policy = hitchtype.PolicyDescription{Kind: "go"}
	if pd, ok := d.Policy.(policy.Describer); ok {
		pdesc := pd.Describe()
		desc.Policy = hitchtype.PolicyDescription{Kind: pdesc.Kind, Reason: pdesc.Reason, Rules: pdesc.Rules}
	}
	if d.Budget != nil {
		b := *d.Budget
		desc.Budget = &b
	}
	desc.ApproversKind = "none"
	if approvers != nil {
		desc.ApproversKind = "go"
		if l, ok := approvers.(approval.Lister); ok {
			desc.ApproversKind = "listed"
			for _, m := range l.List() {
				desc.Approvers = append(desc.Approvers, hitchtype.ApproverDescription{Name: m.Name, Requirements: slices.Clone(m.Requirements)})
			}
		}
	}
	if d.Typed && len(d.Answer) > 0 {
		desc.Answer = slices.Clone(d.Answer)
	}
	return desc
}
