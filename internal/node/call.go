package node

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/store"
)

// Call returns the record of one tool call of a run, read backwards from
// the journal's end until the reply that asked for it.
func (n *Node) Call(ctx context.Context, runID, key string) (hitchtype.CallRecord, error) {
	turn, _, ok := hitchtype.ParseCallKey(key)
	if !ok {
		return hitchtype.CallRecord{}, fmt.Errorf("call %s of %s: %w (a call is named t<turn>c<n>)", key, runID, engine.ErrUnknownCall)
	}
	run, err := n.cfg.Engine.Store.RunGet(ctx, runID)
	if err != nil {
		return hitchtype.CallRecord{}, fmt.Errorf("call %s of %s: %w", key, runID, err)
	}
	var pages [][]store.Entry
	for from := run.Position; from > 0; {
		after := max(0, from-int64(store.DefaultReadLimit))
		es, err := n.cfg.Engine.Store.JournalRead(ctx, store.JournalReadParams{RunID: runID, After: after, Limit: int(from - after)})
		if err != nil {
			return hitchtype.CallRecord{}, fmt.Errorf("call %s of %s: %w", key, runID, err)
		}
		pages = append(pages, es)
		for i := len(es) - 1; i >= 0; i-- {
			e := es[i]
			if e.Kind != hitchtype.KindModelReply {
				continue
			}
			var reply hitchtype.ModelReply
			if err := json.Unmarshal(e.Data, &reply); err != nil {
				return hitchtype.CallRecord{}, fmt.Errorf("call %s of %s: entry %d: %w", key, runID, e.Pos, err)
			}
			if reply.Turn > turn {
				continue
			}
			c, ok := hitchtype.NewCallRecord(key, e.Pos, e.At, reply)
			if !ok {
				return hitchtype.CallRecord{}, fmt.Errorf("call %s of %s: %w", key, runID, engine.ErrUnknownCall)
			}
			return c, foldCall(&c, pages, e.Pos)
		}
		from = after
	}
	return hitchtype.CallRecord{}, fmt.Errorf("call %s of %s: %w", key, runID, engine.ErrUnknownCall)
}

// foldCall adds to c the entries of pages (read backwards: the last page
// is the earliest) after position from.
func foldCall(c *hitchtype.CallRecord, pages [][]store.Entry, from int64) error {
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
