package store

import (
	"encoding/json"
	"fmt"

	"github.com/hitch-dev/hitch/hitchtype"
)

// RunOf turns a run row into a hitchtype.Run, decoding its outcome.
func RunOf(r Run) (hitchtype.Run, error) {
	out := hitchtype.Run{ID: r.ID, RootID: r.RootID, ParentID: r.ParentID, Tenant: r.Tenant, Agent: r.Agent, Version: r.Version,
		Status: r.Status, Position: r.Position, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Title: r.Title,
		ForkedFrom: r.ForkedFrom}
	if len(r.Outcome) > 0 {
		var o hitchtype.Outcome
		if err := json.Unmarshal(r.Outcome, &o); err != nil {
			return hitchtype.Run{}, fmt.Errorf("decode outcome of %s: %w", r.ID, err)
		}
		out.Outcome = &o
	}
	return out, nil
}
