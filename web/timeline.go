package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/hitchtype"
)

// Bounds of a family's timeline (rows of the defaults table).
const (
	// TimelineRuns bounds the runs of a family a timeline draws.
	TimelineRuns = 50
	// TimelineEntries bounds the journal entries a timeline reads of one
	// run, from its start: a longer run's later calls are not drawn.
	TimelineEntries = 5000
	// TimelineCalls bounds the calls a timeline draws of one run.
	TimelineCalls = 200
)

// timelineData is a family drawn on one time axis: a bar per run and,
// under each, a bar per tool call.
type timelineData struct {
	Root      api.Run
	Self      string
	From, To  time.Time
	Rows      []timelineRow
	Truncated []string // what was left out, in words
}

// timelineRow is one bar: a run's or a call's, with its span on the axis
// (X and W in thousandths of the family's span).
type timelineRow struct {
	Run, Call, Label, State string
	Depth                   int
	Start, End              time.Time
	Took                    string
	X, W                    int64
}

// timeline draws the family of a run.
func (c *Console) timeline(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var run api.Run
	if res := c.get(r, "/v1/runs/"+url.PathEscape(id), &run); !res.ok() {
		c.refused(w, r, res)
		return
	}
	d := timelineData{Self: run.ID}
	if res := c.get(r, "/v1/runs/"+url.PathEscape(run.RootID), &d.Root); !res.ok() {
		c.refused(w, r, res)
		return
	}
	var fam api.RunPage
	if res := c.get(r, fmt.Sprintf("/v1/runs?root_id=%s&limit=%d", url.QueryEscape(run.RootID), TimelineRuns), &fam); !res.ok() {
		c.refused(w, r, res)
		return
	}
	if fam.Next != "" {
		d.Truncated = append(d.Truncated, fmt.Sprintf("the family has more than %d runs: the newest %d are drawn", TimelineRuns, TimelineRuns))
	}
	for _, fr := range familyTree(fam.Runs, run.ID) {
		end := fr.Run.UpdatedAt
		state := badge(fr.Run)
		if !hitchtype.Status(fr.Run.Status).Terminal() {
			end = time.Now()
		}
		d.Rows = append(d.Rows, timelineRow{Run: fr.Run.ID, Label: fr.Run.ID + " · " + fr.Run.Agent, State: state,
			Depth: fr.Depth, Start: fr.Run.CreatedAt, End: end})
		calls, more := c.timelineCalls(r, fr.Run)
		if more != "" {
			d.Truncated = append(d.Truncated, more)
		}
		for _, cr := range calls {
			row := timelineRow{Run: fr.Run.ID, Call: cr.Key, Label: cr.Key + " · " + cr.Tool, State: cr.State,
				Depth: fr.Depth + 1, Start: cr.AskedAt, End: end}
			if cr.EndedAt != nil {
				row.End = *cr.EndedAt
			}
			d.Rows = append(d.Rows, row)
		}
	}
	if len(d.Rows) == 0 {
		c.render(w, r, http.StatusOK, "timeline", page{Title: "Timeline of " + run.RootID, Nav: "runs", Data: d})
		return
	}
	d.From, d.To = d.Rows[0].Start, d.Rows[0].End
	for _, row := range d.Rows {
		d.From, d.To = minTime(d.From, row.Start), maxTime(d.To, row.End)
	}
	total := max(d.To.Sub(d.From), time.Millisecond)
	for i := range d.Rows {
		row := &d.Rows[i]
		row.X = int64(meterWidth * row.Start.Sub(d.From) / total)
		row.W = max(int64(meterWidth*row.End.Sub(row.Start)/total), 2)
		row.Took = span(row.End.Sub(row.Start))
	}
	c.render(w, r, http.StatusOK, "timeline", page{Title: "Timeline of " + run.RootID, Nav: "runs", Data: d})
}

// timelineCalls folds a run's calls from its journal's first
// TimelineEntries entries; more says what was left out.
func (c *Console) timelineCalls(r *http.Request, run api.Run) (calls []*hitchtype.CallRecord, more string) {
	byKey := map[string]*hitchtype.CallRecord{}
	after := int64(0)
	for after < min(run.Position, TimelineEntries) {
		var ep api.EntryPage
		limit := min(1000, TimelineEntries-after)
		if res := c.get(r, fmt.Sprintf("/v1/runs/%s/journal?after=%d&limit=%d", url.PathEscape(run.ID), after, limit), &ep); !res.ok() || len(ep.Entries) == 0 {
			break
		}
		for _, e := range ep.Entries {
			after = e.Pos
			if e.Kind == hitchtype.KindModelReply {
				var reply hitchtype.ModelReply
				if json.Unmarshal(e.Data, &reply) != nil {
					continue
				}
				for i := range reply.Reply.ToolCalls {
					if len(calls) == TimelineCalls {
						more = fmt.Sprintf("run %s has more than %d calls: the first %d are drawn", run.ID, TimelineCalls, TimelineCalls)
						break
					}
					if cr, ok := hitchtype.NewCallRecord(hitchtype.CallKey(reply.Turn, i+1), e.Pos, e.At, reply); ok {
						calls = append(calls, &cr)
						byKey[cr.Key] = &cr
					}
				}
				continue
			}
			var head struct {
				Call string `json:"call"`
			}
			if json.Unmarshal(e.Data, &head) == nil && byKey[head.Call] != nil {
				_ = byKey[head.Call].Add(e.Pos, e.Kind, e.At, e.Data)
			}
		}
	}
	if run.Position > TimelineEntries && more == "" {
		more = fmt.Sprintf("run %s has %d journal entries: the calls of its first %d are drawn", run.ID, run.Position, TimelineEntries)
	}
	return calls, more
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
