package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/tool"
)

// turnTools returns the tools the next turn offers: their names and specs,
// and the specs of those that came from the agent's sources. A turn whose
// model call was already attempted (a retry, a recovery) keeps the set its
// context recorded, so it never changes mid-turn and a replay rebuilds the
// same request from the journal, whatever the sources say now. A new turn
// reads the sources.
func (r *runner) turnTools() (names []string, specs, sourced []model.ToolSpec) {
	a, st := r.agent, r.st
	if len(a.Sources) == 0 {
		return a.names, a.specs, nil
	}
	if c := st.context; st.turnOpen && c != nil && !c.FinalTurn {
		return c.Tools, r.recordedSpecs(c), c.Specs
	}
	r.readSources()
	names, specs = slices.Clone(a.names), slices.Clone(a.specs)
	for _, name := range r.dynOrder {
		info := r.dyn[name].Info()
		// Spelled as the journal will spell it, so that the recorded spec
		// compares equal to the live one next turn.
		schema, _ := json.Marshal(json.RawMessage(info.Schema))
		s := model.ToolSpec{Name: name, Description: info.Description, Schema: schema}
		names, specs, sourced = append(names, name), append(specs, s), append(sourced, s)
	}
	return names, specs, sourced
}

// recordedSpecs rebuilds the specs of a recorded context: the agent's own
// tools from its definition, the others from the record.
func (r *runner) recordedSpecs(c *Context) []model.ToolSpec {
	byName := make(map[string]model.ToolSpec, len(r.agent.specs)+len(c.Specs))
	for _, s := range r.agent.specs {
		byName[s.Name] = s
	}
	for _, s := range c.Specs {
		byName[s.Name] = s
	}
	specs := make([]model.ToolSpec, 0, len(c.Tools))
	for _, name := range c.Tools {
		if s, ok := byName[name]; ok {
			specs = append(specs, s)
		}
	}
	return specs
}

// readSources takes the sources' current tools. A tool named like one of
// the agent's tools or sub-agents, or like an earlier source's tool, is
// left out, and so is one whose schema is not JSON.
func (r *runner) readSources() {
	r.dyn, r.dynOrder = map[string]tool.Tool{}, nil
	for _, src := range r.agent.Sources {
		for _, t := range src.Tools() {
			info := t.Info()
			_, taken := r.agent.byName[info.Name]
			_, dup := r.dyn[info.Name]
			if taken || dup || !json.Valid(info.Schema) {
				continue
			}
			r.dyn[info.Name] = t
			r.dynOrder = append(r.dynOrder, info.Name)
		}
	}
}

// sourced returns the source's tool name names when the current turn
// offered it, or nil: not offered, or withdrawn by its source since (after
// a restart, the sources are read anew).
func (r *runner) sourced(name string) tool.Tool {
	if len(r.agent.Sources) == 0 || !r.offered(name) {
		return nil
	}
	if r.dyn == nil {
		r.readSources()
	}
	if t, ok := r.dyn[name]; ok {
		return t
	}
	return nil
}

// offered reports whether the current turn offered a tool of that name.
func (r *runner) offered(name string) bool {
	c := r.st.context
	return c != nil && slices.Contains(c.Tools, name)
}

// turnNames are the tool names the current turn offered.
func (r *runner) turnNames() []string {
	if c := r.st.context; len(r.agent.Sources) > 0 && c != nil {
		return c.Tools
	}
	return r.agent.names
}

// sameSpecs reports whether two lists of sourced specs declare the same
// tools, in the same order.
func sameSpecs(a, b []model.ToolSpec) bool {
	return slices.EqualFunc(a, b, func(x, y model.ToolSpec) bool {
		return x.Name == y.Name && x.Description == y.Description && bytes.Equal(x.Schema, y.Schema)
	})
}

// withdrawn is the error a call gets when the turn offered its tool and the
// tool's source no longer does.
func withdrawn(name string) string {
	return fmt.Sprintf("the tool %q is no longer available: it was withdrawn after this turn began", name)
}
