package approval

import (
	"slices"
	"sort"
)

// Listed is an approver as a listing shows it: a name and the
// requirements it may answer, never its secret.
type Listed struct {
	Name         string
	Requirements []string
}

// Lister is implemented by Approvers that can say who they are, for people
// to read (GET /v1/agents/{name}, the console's agent page). Approvers
// without it are shown as not listed.
type Lister interface {
	// List returns the approvers by name. It holds no secret.
	List() []Listed
}

var _ Lister = (*Static)(nil)

// List returns the members by name, without their secrets.
func (s *Static) List() []Listed {
	out := make([]Listed, 0, len(s.members))
	for _, m := range s.members {
		out = append(out, Listed{Name: m.Name, Requirements: slices.Clone(m.Requirements)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
