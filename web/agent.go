package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hitch-dev/hitch/api"
)

func init() {
	funcs["budgetName"] = budgetName
	funcs["budgetAmount"] = budgetAmount
	funcs["budgetUsed"] = func(unit string, v *float64) string {
		if v == nil {
			return "not reported"
		}
		return budgetAmount(unit, *v)
	}
	funcs["json"] = func(b []byte) string { return prettyJSON(string(b)) }
	funcs["inc"] = func(i int) int { return i + 1 }
	funcs["toolNotes"] = toolNotes
}

// toolNotes says how a tool's calls behave.
func toolNotes(t api.AgentTool) string {
	var notes []string
	if t.External {
		notes = append(notes, "external: another system does the work")
	}
	if t.FromSource {
		notes = append(notes, "from a tool source")
	}
	if t.Replay > 0 {
		notes = append(notes, fmt.Sprintf("replayable, %d attempts", t.Replay))
	} else {
		notes = append(notes, "at most once")
	}
	if t.Timeout != "" {
		notes = append(notes, "timeout "+t.Timeout)
	}
	return strings.Join(notes, "; ")
}

// agentPage shows one agent's definition, as GET /v1/agents/{name} gives
// it: never a secret.
func (c *Console) agentPage(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var d api.AgentDetail
	if res := c.get(r, "/v1/agents/"+url.PathEscape(name), &d); !res.ok() {
		c.refused(w, r, res)
		return
	}
	c.render(w, r, http.StatusOK, "agent", page{Title: "Agent " + d.Name, Nav: "agents", Data: d})
}

// runBudget reads what bounds a run and what is left; nil when the API
// does not answer, so the run page still shows the rest.
func (c *Console) runBudget(r *http.Request, id string) *api.RunBudget {
	var b api.RunBudget
	if res := c.get(r, "/v1/runs/"+url.PathEscape(id)+"/budget", &b); !res.ok() {
		return nil
	}
	return &b
}

// budgetName names a budget counter for people.
func budgetName(name string) string {
	switch name {
	case "usd":
		return "cost (USD)"
	case "wall_time":
		return "wall time"
	}
	return strings.ReplaceAll(name, "_", " ")
}

// budgetAmount writes an amount in its unit.
func budgetAmount(unit string, v float64) string {
	switch unit {
	case "usd":
		return fmt.Sprintf("$%.4f", v)
	case "ms":
		return (time.Duration(v) * time.Millisecond).Round(time.Second).String()
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
