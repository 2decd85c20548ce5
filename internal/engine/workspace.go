package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/tool"
)

// Workspace builds a run's own sandbox and the tools bound to it. Each run
// gets its own, so roots granted to one run reach no other; the journal
// keeps the grants, and a recovered runner applies them again.
type Workspace func() (sandbox.Sandbox, []tool.Tool, error)

// closer is a sandbox that holds resources.
type closer interface{ Close() error }

// ErrNoWorkspace: the run's agent has no workspace to grant roots in.
var ErrNoWorkspace = errors.New("the agent has no workspace")

// openWorkspace gives the runner its sandbox, with the journal's grants.
func (r *runner) openWorkspace() error {
	if r.agent.Workspace == nil {
		return nil
	}
	sb, tools, err := r.agent.Workspace()
	if err != nil {
		return fmt.Errorf("open workspace: %w", err)
	}
	r.sb = sb
	r.tools = make(map[string]tool.Tool, len(tools))
	for _, t := range tools {
		r.tools[t.Info().Name] = t
	}
	for _, root := range r.st.roots {
		// A root that has gone since it was granted stays out; tools
		// touching it fail with a clear error.
		_ = sb.Grant(root)
	}
	return nil
}

func (r *runner) closeWorkspace() {
	if c, ok := r.sb.(closer); ok {
		_ = c.Close()
	}
}

// toolFor returns the tool a call names: the run's own when it has a
// workspace, else the agent's, else a source's that the turn offered; nil
// when there is none.
func (r *runner) toolFor(name string) tool.Tool {
	if t, ok := r.tools[name]; ok {
		return t
	}
	if t, ok := r.agent.byName[name]; ok {
		return t
	}
	return r.sourced(name)
}

// RootChange grants or revokes a workspace root of one run.
type RootChange struct {
	Path   string
	Revoke bool
	By     string
}

// ChangeRoot grants a directory to a run's workspace, or revokes it, and
// journals the change. It waits at most wait for a live runner.
func (e *Engine) ChangeRoot(ctx context.Context, runID string, ch RootChange, wait time.Duration) error {
	st, err := e.foldRun(ctx, runID)
	if err != nil {
		return err
	}
	a, ok := e.cfg.Agents(st.started.Agent, st.started.Version)
	switch {
	case !ok:
		return fmt.Errorf("%w: %s version %d", ErrUnknownAgent, st.started.Agent, st.started.Version)
	case a.Workspace == nil:
		return ErrNoWorkspace
	case st.ended != nil:
		return fmt.Errorf("%w: %s", errEnded, runID)
	}
	path, err := filepath.Abs(ch.Path)
	if err != nil {
		return err
	}
	path = filepath.Clean(path)
	granted := false
	for _, r := range st.roots {
		granted = granted || r == path
	}
	if ch.Revoke && !granted {
		return fmt.Errorf("%w: %s", sandbox.ErrNotGranted, path)
	}
	if !ch.Revoke {
		if granted {
			return nil // granting again is a no-op
		}
		if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
			return fmt.Errorf("grant root %s: not an existing directory", path)
		}
	}
	return e.command(ctx, runID, wait, leaveAsFound, func(r *runner) (reply, err error) {
		if ch.Revoke {
			err = r.sb.Revoke(path)
		} else {
			err = r.sb.Grant(path)
		}
		if err != nil {
			return err, nil
		}
		kind := KindRootGranted
		if ch.Revoke {
			kind = KindRootRevoked
		}
		err = r.commit(entry(kind, RootChanged{Path: path, By: ch.By}))
		return err, err
	})
}

// Roots lists the roots granted to a run, in the order granted. It reads
// only the journal's grants and revocations, which the store picks out,
// so its cost does not grow with the rest of the journal.
func (e *Engine) Roots(ctx context.Context, runID string) ([]string, error) {
	roots := []string{}
	after := int64(0)
	for {
		page, err := e.cfg.Store.JournalRead(ctx, store.JournalReadParams{RunID: runID, After: after,
			Limit: store.DefaultReadLimit, Kinds: []string{KindRootGranted, KindRootRevoked}})
		if err != nil {
			return nil, err
		}
		for _, en := range page {
			var rc RootChanged
			if err := json.Unmarshal(en.Data, &rc); err != nil {
				return nil, fmt.Errorf("roots of %s: entry %d: %w", runID, en.Pos, err)
			}
			roots = applyRoot(roots, en.Kind, rc.Path)
		}
		if len(page) < store.DefaultReadLimit {
			return roots, nil
		}
		after = page[len(page)-1].Pos
	}
}

// applyRoot applies a grant or a revocation to roots: a path is listed
// once, at its latest grant.
func applyRoot(roots []string, kind, path string) []string {
	roots = slices.DeleteFunc(roots, func(p string) bool { return p == path })
	if kind == KindRootGranted {
		roots = append(roots, path)
	}
	return roots
}
