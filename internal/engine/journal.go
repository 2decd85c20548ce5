package engine

import (
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

// redact replaces secret values in an entry's data.
func (e *Engine) redact(in store.EntryInput) store.EntryInput {
	in.Data = e.cfg.Secrets.Bytes(in.Data)
	return in
}

// titleOf is the title of a run from its redacted run.started entry, so
// that no secret reaches the runs table either.
func titleOf(started store.EntryInput) string {
	var rs struct {
		Input string `json:"input"`
	}
	_ = json.Unmarshal(started.Data, &rs)
	return rs.Input
}
