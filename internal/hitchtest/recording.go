package hitchtest

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"sync"

	"github.com/hitch-dev/hitch/model"
)

// RecordingModel appends every request it gets to the file at Path, one
// JSON line each written in one call (so several processes may share the
// file), and plays Next on the part of the request from its last user
// message on: every submission and every steer of a session plays Next's
// script from its start, whatever history precedes it.
type RecordingModel struct {
	Next model.Model
	Path string
	mu   sync.Mutex
}

// Name is Next's name.
func (m *RecordingModel) Name() string { return m.Next.Name() }

// Generate records req and plays Next on its tail.
func (m *RecordingModel) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	b, err := json.Marshal(req)
	if err == nil {
		m.mu.Lock()
		var f *os.File
		if f, err = os.OpenFile(m.Path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			_, err = f.Write(append(b, '\n'))
			f.Close()
		}
		m.mu.Unlock()
	}
	if err != nil {
		return func(yield func(*model.Chunk, error) bool) { yield(nil, err) }
	}
	last := 0
	for i, msg := range req.Messages {
		if msg.Role == model.RoleUser {
			last = i
		}
	}
	r := *req
	r.Messages = req.Messages[last:]
	return m.Next.Generate(ctx, &r)
}

// TranscriptError says how a request breaks "every tool call has exactly
// one result, in order, before any other message", or returns nil.
func TranscriptError(req *model.Request) error {
	var pending []string
	for i, m := range req.Messages {
		switch m.Role {
		case model.RoleTool:
			if len(pending) == 0 || pending[0] != m.ToolCallID {
				return fmt.Errorf("message %d: a result for %q, but the calls waiting for results are %v", i, m.ToolCallID, pending)
			}
			pending = pending[1:]
		default:
			if len(pending) > 0 {
				return fmt.Errorf("message %d (%s) comes before the results of calls %v", i, m.Role, pending)
			}
			for _, c := range m.ToolCalls {
				pending = append(pending, c.ID)
			}
		}
	}
	if len(pending) > 0 {
		return fmt.Errorf("the request ends with calls %v without results", pending)
	}
	return nil
}
