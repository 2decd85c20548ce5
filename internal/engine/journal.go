package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hitch-dev/hitch/store"
)

func entry(kind string, data any) store.EntryInput {
	b, err := json.Marshal(data)
	if err != nil {
		// Every data type above marshals; a failure is a programming error.
		panic(fmt.Sprintf("encode %s: %v", kind, err))
	}
	return store.EntryInput{Kind: kind, Data: b}
}

// encoded is an entry's data with the value it was encoded from.
type encoded struct {
	data  []byte
	value any
}

// entry encodes data like the function entry and remembers the value, so
// that staging this very entry next (the runner's hot path: attempts,
// replies, decisions, starts and results) folds the value into the state
// without decoding the bytes it was just encoded into. Any other entry
// staged in between is decoded as usual.
func (r *runner) entry(kind string, data any) store.EntryInput {
	e := entry(kind, data)
	r.encoded = encoded{data: e.Data, value: data}
	return e
}

// Redact is the one redaction point on the way in: it replaces every
// secret value (Config.Secrets) in data. Every entry a journal receives
// passes it before it is staged — a runner's (stage), a new run's first,
// a session's (AppendSession) — and so does every caller's text kept
// beside them (a session's metadata, a trigger's definition), so no
// surface can write a declared secret down raw.
func (e *Engine) Redact(data []byte) []byte { return e.cfg.Secrets.Bytes(data) }

// redact passes an entry's data through Redact.
func (e *Engine) redact(in store.EntryInput) store.EntryInput {
	in.Data = e.Redact(in.Data)
	return in
}

// AppendSession appends an entry to a session's journal, its data passed
// through Redact first.
func (e *Engine) AppendSession(ctx context.Context, ss store.SessionStore, p store.SessionAppendParams) (store.SessionAppendResult, error) {
	p.Data = e.Redact(p.Data)
	return ss.SessionAppend(ctx, p)
}

// startedEntry is a new run's run.started entry, through Redact, and the
// run's title: its input as redacted, so that no secret reaches the runs
// table either. When Redact hands back the bytes it was given (no secret
// in them) the title is the input itself, nothing is decoded, and value
// is rs, for the runner to fold without decoding the entry (see
// state.applyValue); otherwise value is nil.
func (e *Engine) startedEntry(rs RunStarted) (first store.EntryInput, title string, value any) {
	in := entry(KindRunStarted, rs)
	out := e.redact(in)
	if len(out.Data) == len(in.Data) && &out.Data[0] == &in.Data[0] {
		return out, rs.Input, rs
	}
	return out, titleOf(out), nil
}

// titleOf is the title of a run from its redacted run.started entry.
func titleOf(started store.EntryInput) string {
	var rs struct {
		Input string `json:"input"`
	}
	_ = json.Unmarshal(started.Data, &rs)
	return rs.Input
}
