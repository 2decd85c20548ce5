package hitch

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// CallRecord is one tool call's lifecycle as its run's journal tells it.
type CallRecord = hitchtype.CallRecord

// Call returns the record of one tool call of a run, by the journal's id
// of it ("t3c1"): the tool and its arguments, the decision and the
// approval's answer, when its body started and on which node, and how it
// ended. It reads the journal backwards from its end a page at a time
// until it reaches the reply that asked for the call, so a recent call of
// a long journal is cheap. ErrUnknownCall when the run has no such call.
func (rt *Runtime) Call(ctx context.Context, runID, key string) (CallRecord, error) {
	turn, _, ok := hitchtype.ParseCallKey(key)
	if !ok {
		return CallRecord{}, fmt.Errorf("call %s of %s: %w (a call is named t<turn>c<n>)", key, runID, ErrUnknownCall)
	}
	run, err := rt.cfg.Store.RunGet(ctx, runID)
	if err != nil {
		return CallRecord{}, fmt.Errorf("call %s of %s: %w", key, runID, err)
	}
	var pages [][]store.Entry
	for from := run.Position; from > 0; {
		after := max(0, from-int64(store.DefaultReadLimit))
		es, err := rt.cfg.Store.JournalRead(ctx, store.JournalReadParams{RunID: runID, After: after, Limit: int(from - after)})
		if err != nil {
			return CallRecord{}, fmt.Errorf("call %s of %s: %w", key, runID, err)
		}
		pages = append(pages, es)
		for i := len(es) - 1; i >= 0; i-- {
			e := es[i]
			if e.Kind != hitchtype.KindModelReply {
				continue
			}
			var reply hitchtype.ModelReply
			if err := json.Unmarshal(e.Data, &reply); err != nil {
				return CallRecord{}, fmt.Errorf("call %s of %s: entry %d: %w", key, runID, e.Pos, err)
			}
			if reply.Turn > turn {
				continue
			}
			c, ok := hitchtype.NewCallRecord(key, e.Pos, e.At, reply)
			if !ok {
				return CallRecord{}, fmt.Errorf("call %s of %s: %w", key, runID, ErrUnknownCall)
			}
			return c, foldCall(&c, pages, e.Pos)
		}
		from = after
	}
	return CallRecord{}, fmt.Errorf("call %s of %s: %w", key, runID, ErrUnknownCall)
}

// foldCall adds to c the entries of pages (read backwards: the last page
// is the earliest) after position from.
func foldCall(c *CallRecord, pages [][]store.Entry, from int64) error {
	for i := len(pages) - 1; i >= 0; i-- {
		for _, e := range pages[i] {
			if e.Pos <= from {
				continue
			}
			if err := c.Add(e.Pos, e.Kind, e.At, e.Data); err != nil {
				return err
			}
		}
	}
	return nil
}
