package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/hitchtype"
)

func init() { funcs["runningCost"] = runningCost }

// meterWidth is the SVG meter's width in user units; segments are laid
// out on it in proportion to the window (or, with no window, to the
// estimate).
const meterWidth = 1000

// contextData is the run page's context meter: the latest model
// request's account and the family's running cost.
type contextData struct {
	Latest     *meterRequest
	FamilyCost api.RunningCost
	Failed     bool // the account could not be read
}

// meterRequest is one request laid out for the meter.
type meterRequest struct {
	api.ContextRequest
	Segs     []meterSeg
	Fill     string // "3.1%", or "" with no window
	Alt      string // the meter in words
	Input    string
	Output   string
	Window   string
	Estimate string
}

// meterSeg is one category: its share of the bar and its legend row.
type meterSeg struct {
	Name, Label string
	Tokens      int64
	X, W        int64
}

// contextMeter reads the context account of run id (path-escaped) for
// the run page. A refusal leaves the meter saying so; the page still
// renders.
func (c *Console) contextMeter(r *http.Request, id string) contextData {
	var rc api.RunContext
	if res := c.get(r, "/v1/runs/"+id+"/context?limit=1", &rc); !res.ok() {
		return contextData{Failed: true}
	}
	d := contextData{FamilyCost: rc.FamilyCost}
	if n := len(rc.Requests); n > 0 {
		d.Latest = layOut(rc.Requests[n-1])
	}
	return d
}

// Meter is the request the meter shows: the latest, or an empty one of
// the same shape before the first, so the page keeps its layout.
func (d contextData) Meter() *meterRequest {
	if d.Latest != nil {
		return d.Latest
	}
	m := layOut(api.ContextRequest{Context: &api.ContextAccount{}})
	m.Alt, m.Input, m.Output, m.Estimate, m.Window = "No model request yet.", "-", "-", "-", "-"
	return m
}

// layOut computes a request's segments, fill and text alternative.
func layOut(q api.ContextRequest) *meterRequest {
	m := &meterRequest{ContextRequest: q, Input: "pending", Output: "pending"}
	switch {
	case q.Result == "":
	case q.Usage == nil:
		m.Input, m.Output = "not reported", "not reported"
	default:
		m.Input, m.Output = reportedTokens(q.Usage.InputTokens), reportedTokens(q.Usage.OutputTokens)
	}
	a := q.Context
	if a == nil {
		a = &api.ContextAccount{}
		defer func() {
			m.Alt, m.Estimate, m.Window = "This request was journaled before hitch kept context accounts.", "not accounted", "-"
		}()
	}
	cat := a.Categories
	all := []meterSeg{
		{Name: "system", Label: "system instructions", Tokens: cat.System},
		{Name: "agent", Label: "agent instructions", Tokens: cat.Agent},
		{Name: "run", Label: "run instructions", Tokens: cat.Run},
		{Name: "hook", Label: "hook instructions", Tokens: cat.Hook},
		{Name: "tools", Label: "tool definitions", Tokens: cat.Tools},
		{Name: "user", Label: "user messages", Tokens: cat.User},
		{Name: "assistant", Label: "assistant messages", Tokens: cat.Assistant},
		{Name: "tool_results", Label: "tool results", Tokens: cat.ToolResults},
		{Name: "summary", Label: "compaction summary", Tokens: cat.Summary},
		{Name: "answer_schema", Label: "answer schema", Tokens: cat.AnswerSchema},
	}
	scale := max(a.Window, a.Estimate, 1)
	var x int64
	var words []string
	for _, s := range all {
		s.X = x
		s.W = min(meterWidth*s.Tokens/scale, meterWidth-x)
		if s.Tokens > 0 && s.W == 0 && x < meterWidth {
			s.W = 1
		}
		x += s.W
		if s.Tokens > 0 {
			words = append(words, fmt.Sprintf("%s %d", s.Label, s.Tokens))
		}
		m.Segs = append(m.Segs, s)
	}
	m.Estimate = strconv.FormatInt(a.Estimate, 10)
	m.Window = "not set"
	alt := fmt.Sprintf("%d tokens estimated", a.Estimate)
	if a.Window > 0 {
		m.Window = strconv.FormatInt(a.Window, 10)
		m.Fill = fmt.Sprintf("%.1f%%", 100*float64(a.Estimate)/float64(a.Window))
		alt = fmt.Sprintf("%d of %d tokens estimated (%s of the window)", a.Estimate, a.Window, m.Fill)
	}
	if len(words) > 0 {
		alt += ": " + strings.Join(words, ", ")
	}
	m.Alt = alt + "."
	return m
}

func reportedTokens(n *int64) string {
	if n == nil {
		return "not reported"
	}
	return strconv.FormatInt(*n, 10)
}

// runningCost says what a family has cost so far.
func runningCost(c api.RunningCost) string {
	runs := fmt.Sprintf("%d runs", c.Runs)
	if c.Runs == 1 {
		runs = "1 run"
	}
	if c.Live > 0 {
		runs += fmt.Sprintf(", %d still running", c.Live)
	}
	if c.USD == nil {
		return "not priced (a model without a price, or a call that reported no usage); " + runs
	}
	return fmt.Sprintf("$%.4f so far; %s", *c.USD, runs)
}

// contextField says a model.attempt's account in a line of the
// transcript: the estimate and, with a window, its fill.
func contextField(a *hitchtype.ContextAccount) string {
	if a == nil {
		return ""
	}
	if pct, ok := a.Fill(); ok {
		return fmt.Sprintf("%d tokens estimated (%s), %.1f%% of %d", a.Estimate, a.Estimator, pct, a.Window)
	}
	return fmt.Sprintf("%d tokens estimated (%s)", a.Estimate, a.Estimator)
}
