package engine

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store"
)

// Errors of approval answers.
var (
	ErrNoApproval       = errors.New("the call does not wait for an approval")
	ErrAnswered         = errors.New("the approval request was already answered")
	ErrApprovalExpired  = errors.New("the approval request has expired")
	ErrDeniedAtAnswer   = errors.New("the policy denied the call at approval time")
	errAnswerNotApplied = errors.New("answer not applied")
)

// ApprovalAnswerParams answer one approval request.
type ApprovalAnswerParams struct {
	Call    string
	Approve bool
	By      string
	Reason  string
	// Verify checks the answerer's proof for the request's requirement at
	// the store's time; an error refuses the answer and records nothing.
	Verify func(requirement string, now time.Time) error
}

// AnswerApproval grants or rejects a pending approval request and drives
// the run on in the background. A request past its deadline is recorded as
// expired (the model is told) and the answer is refused with
// ErrApprovalExpired. The policy is asked again, the same question as at the
// decision, before a grant takes effect; a denial then is recorded (the
// model is told) and returned as ErrDeniedAtAnswer.
func (e *Engine) AnswerApproval(ctx context.Context, runID string, p ApprovalAnswerParams, wait time.Duration) error {
	check := func(st *state, now time.Time) (*callState, bool, error) { return checkApproval(st, p.Call, now) }
	verify := func(c *callState, now time.Time) error {
		if p.Verify == nil {
			return nil
		}
		return p.Verify(c.decision.Requirement, now)
	}
	return e.answerCall(ctx, runID, wait, check, verify, func(r *runner, c *callState, expired bool) (reply, err error) {
		switch {
		case expired:
			// Recording the lapse is the runner's own business; the
			// answer is refused either way.
			return fmt.Errorf("%w: %s (deadline %s)", ErrApprovalExpired, p.Call, c.expires.UTC().Format(time.RFC3339)), r.lapse(r.expireApprovals)
		case !p.Approve:
			err := r.commit(entry(KindApprovalDeny, ApprovalAnswer{Call: c.key, By: p.By, Reason: p.Reason}))
			return err, err
		}
		// The world may have changed since the request: ask the policy
		// again. A denial now wins; another approval verdict is satisfied
		// by this one.
		// A call with arguments that are not JSON is rejected before it
		// can wait for an approval.
		action, _ := r.action(c)
		d, err := r.ask(action)
		if err != nil {
			reply := fmt.Errorf("%w: no policy decision at approval time (fail closed): %v", errAnswerNotApplied, err)
			return reply, r.finish(Outcome{Status: hitchtype.StatusFailed, Reason: "policy",
				Error: fmt.Sprintf("no policy decision for %s at approval time, so it did not run (fail closed): %v", c.call.Name, err)})
		}
		grant := entry(KindApprovalGrant, ApprovalAnswer{Call: c.key, By: p.By, Reason: p.Reason})
		if d.Verdict == policy.Deny {
			reason := d.Reason
			if reason == "" {
				reason = "no reason given"
			}
			err := r.commit(grant, entry(KindCallDecided, CallDecided{Call: c.key, Verdict: policy.Deny, Reason: "at approval time: " + reason}))
			if err == nil {
				return fmt.Errorf("%w: %s: %s", ErrDeniedAtAnswer, p.Call, reason), nil
			}
			return err, err
		}
		err = r.commit(grant)
		return err, err
	})
}

// checkApproval finds a call waiting for an answer. expired reports a
// request past its deadline at now.
func checkApproval(st *state, call string, now time.Time) (c *callState, expired bool, err error) {
	c = st.findCall(call)
	switch {
	case c == nil:
		return nil, false, fmt.Errorf("%w: %s", ErrUnknownCall, call)
	case c.approval == "":
		return nil, false, fmt.Errorf("%w: %s", ErrNoApproval, call)
	case c.approval == approvalExpired:
		return nil, false, fmt.Errorf("%w: %s (deadline %s)", ErrApprovalExpired, call, c.expires.UTC().Format(time.RFC3339))
	case c.approval != approvalPending || c.done:
		return nil, false, fmt.Errorf("%w: %s (%s)", ErrAnswered, call, c.approval)
	case st.ended != nil:
		return nil, false, fmt.Errorf("%w: the run has ended", store.ErrEnded)
	}
	return c, c.overdue(now), nil
}

// answerCall checks an answer to a waiting call on the folded journal
// before it takes the lease, so a refusal costs no runner, then checks it
// again under the lease and commits what act makes of it. check finds the
// call and says whether its deadline has passed at now; verify, if given,
// judges the answerer's proof before the lease is taken, for a call whose
// deadline has not passed.
func (e *Engine) answerCall(ctx context.Context, runID string, wait time.Duration,
	check func(st *state, now time.Time) (*callState, bool, error),
	verify func(c *callState, now time.Time) error,
	act func(r *runner, c *callState, expired bool) (reply, err error),
) error {
	st, now, err := e.foldNow(ctx, runID)
	if err != nil {
		return err
	}
	c, expired, err := check(st, now)
	if err != nil {
		return err
	}
	if !expired && verify != nil {
		if err := verify(c, now); err != nil {
			return err
		}
	}
	return e.command(ctx, runID, wait, driveOn, func(r *runner) (reply, err error) {
		now, err := e.cfg.Store.Now(r.ctx)
		if err != nil {
			return err, err
		}
		c, expired, err := check(r.st, now)
		if err != nil {
			return err, nil
		}
		return act(r, c, expired)
	})
}

// lapse journals the lapses expire finds, as a late answer does before
// it is refused.
func (r *runner) lapse(expire func() error) error {
	if err := expire(); err != nil {
		return err
	}
	return r.commit()
}

// foldNow folds a run's journal without taking the lease and reads the
// store's clock.
func (e *Engine) foldNow(ctx context.Context, runID string) (*state, time.Time, error) {
	st, err := e.foldRun(ctx, runID)
	if err != nil {
		return nil, time.Time{}, err
	}
	now, err := e.cfg.Store.Now(ctx)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("read store clock: %w", err)
	}
	return st, now, nil
}

// foldRun reads and folds a journal without taking the lease.
func (e *Engine) foldRun(ctx context.Context, runID string) (*state, error) {
	entries, err := readAll(ctx, e.cfg.Store, runID)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%w: %s", store.ErrNotFound, runID)
	}
	return fold(entries)
}

// foldRuns reads and folds the journals of runs (at most
// store.MaxReadMany) without taking their leases: their heads in one
// statement, the rest of a long journal run by run. A run that is gone (a
// pruned one) folds to nil.
func (e *Engine) foldRuns(ctx context.Context, runs []store.Run) ([]*state, error) {
	ids := make([]string, len(runs))
	for i, run := range runs {
		ids[i] = run.ID
	}
	heads, err := e.cfg.Store.JournalReadMany(ctx, store.JournalReadManyParams{RunIDs: ids, Limit: store.DefaultReadLimit})
	if err != nil {
		return nil, err
	}
	out := make([]*state, len(runs))
	for i, entries := range heads {
		if len(entries) == 0 {
			continue
		}
		for last := entries; len(last) == store.DefaultReadLimit; {
			last, err = e.cfg.Store.JournalRead(ctx, store.JournalReadParams{RunID: ids[i], After: last[len(last)-1].Pos})
			if err != nil {
				return nil, err
			}
			entries = append(entries, last...)
		}
		if out[i], err = fold(entries); err != nil {
			return nil, fmt.Errorf("run %s: %w", ids[i], err)
		}
	}
	return out, nil
}

// PendingApprovalsParams page the approval requests waiting for answers.
type PendingApprovalsParams struct {
	// Tenant limits the list to requests of runs of one tenant; empty
	// means every tenant.
	Tenant string
	// RootID limits the list to one family: a root run and its
	// descendants.
	RootID string
	// After is the cursor a previous page returned; empty starts at the
	// oldest request.
	After string
	// Limit bounds the page: 0 means DefaultPageLimit, at most MaxPageLimit.
	Limit int
}

// Page bounds of listings that page with a cursor.
const (
	DefaultPageLimit = 100
	MaxPageLimit     = 1000
)

// MaxWaitingScan bounds the waiting runs one page of every family's
// requests reads: runs that wait for a child or a timer have none, and a
// page that read this many runs ends early with a cursor to go on from.
const MaxWaitingScan = 1000

// PendingApprovals lists approval requests waiting for an answer, oldest
// run first and in call order within a run, a page at a time: next is the
// cursor of the following page, empty after the last. Without a family,
// waiting runs are read oldest first from the store's index of runs by
// status, so a page costs the same however many runs wait; a page may
// hold fewer than the limit (when it read MaxWaitingScan runs that wait for
// something else) and still have a next. Requests past their deadline by
// the store's clock are left out.
func (e *Engine) PendingApprovals(ctx context.Context, p PendingApprovalsParams) (page []PendingApproval, next string, err error) {
	limit := p.Limit
	switch {
	case limit == 0:
		limit = DefaultPageLimit
	case limit < 0 || limit > MaxPageLimit:
		return nil, "", fmt.Errorf("limit %d is outside 0..%d", p.Limit, MaxPageLimit)
	}
	if err := store.CheckTenant("tenant", p.Tenant, false); err != nil {
		return nil, "", err
	}
	after, err := parseCursor(p.After)
	if err != nil {
		return nil, "", err
	}
	// The store's clock is read while the runs are listed (on a networked
	// store each is a round trip), and waited for only when a request
	// with a deadline is met.
	type reading struct {
		now time.Time
		err error
	}
	read := make(chan reading, 1)
	go func() {
		now, err := e.cfg.Store.Now(ctx)
		read <- reading{now, err}
	}()
	clock := sync.OnceValues(func() (time.Time, error) {
		r := <-read
		if r.err != nil {
			return time.Time{}, fmt.Errorf("read store clock: %w", r.err)
		}
		return r.now, nil
	})
	var lastCreated time.Time
	// take adds run's requests that follow the cursor, and reports a page
	// that is full with more to come.
	wanted := func(run store.Run) bool {
		return run.Status == hitchtype.StatusWaiting && (p.Tenant == "" || run.Tenant == p.Tenant) &&
			(after == nil || run.ID != after.run || after.call != wholeRun)
	}
	take := func(run store.Run, st *state) (full bool, err error) {
		for _, c := range st.pendingApprovals(time.Time{}) {
			if after != nil && run.ID == after.run && !callAfter(c.key, after.call) {
				continue
			}
			if c.expires != nil {
				now, err := clock()
				if err != nil {
					return false, err
				}
				if c.overdue(now) {
					continue
				}
			}
			if len(page) == limit {
				return true, nil
			}
			page = append(page, pendingOf(run, c))
			lastCreated = run.CreatedAt
		}
		return false, nil
	}
	// takeAll folds the runs wanted, in order, until the page is full.
	takeAll := func(runs []store.Run) (full bool, err error) {
		runs = slices.DeleteFunc(slices.Clone(runs), func(run store.Run) bool { return !wanted(run) })
		for chunk := range slices.Chunk(runs, store.MaxReadMany) {
			states, err := e.foldRuns(ctx, chunk)
			if err != nil {
				return false, err
			}
			for i, run := range chunk {
				if states[i] == nil {
					continue
				}
				if full, err := take(run, states[i]); err != nil || full {
					return full, err
				}
			}
		}
		return false, nil
	}
	// stop ends the listing at a full page or an error.
	stop := func(err error) ([]PendingApproval, string, error) {
		if err != nil {
			return nil, "", err
		}
		return page, cursorOf(page[len(page)-1], lastCreated), nil
	}

	if p.RootID != "" {
		runs, err := e.Family(ctx, p.RootID)
		if err != nil {
			return nil, "", err
		}
		slices.SortFunc(runs, func(a, b store.Run) int {
			return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
		})
		runs = slices.DeleteFunc(runs, func(run store.Run) bool {
			return after != nil && (run.CreatedAt.Before(after.created) || run.CreatedAt.Equal(after.created) && run.ID < after.run)
		})
		if full, err := takeAll(runs); err != nil || full {
			return stop(err)
		}
		return page, "", nil
	}

	// The cursor's own run may have requests left after the cursor's call.
	if after != nil && after.call != wholeRun {
		run, err := e.cfg.Store.RunGet(ctx, after.run)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return nil, "", err
		case !run.CreatedAt.Equal(after.created):
			return nil, "", fmt.Errorf("%w: %.80q is not one this listing returned", store.ErrBadCursor, p.After)
		default:
			if full, err := takeAll([]store.Run{run}); err != nil || full {
				return stop(err)
			}
		}
	}
	lp := store.RunListParams{Tenant: p.Tenant, Statuses: []hitchtype.Status{hitchtype.StatusWaiting},
		Oldest: true, Limit: min(limit+1, DefaultPageLimit)}
	if after != nil {
		lp.After = store.RunCursor(store.Run{ID: after.run, CreatedAt: after.created})
	}
	for scanned := 0; ; {
		runs, err := e.cfg.Store.RunList(ctx, lp)
		if err != nil {
			return nil, "", err
		}
		if full, err := takeAll(runs); err != nil || full {
			return stop(err)
		}
		if len(runs) < lp.Limit {
			return page, "", nil
		}
		last := runs[len(runs)-1]
		if scanned += len(runs); scanned >= MaxWaitingScan {
			return page, cursorText(last.CreatedAt, wholeRun, last.ID), nil
		}
		lp.After = store.RunCursor(last)
	}
}

// wholeRun, as a cursor's call, means every request of the cursor's run
// was listed.
const wholeRun = "*"

// Family lists a root run and every run below it, newest first after the
// root, read by the store's index of families a bounded page at a time.
func (e *Engine) Family(ctx context.Context, rootID string) ([]store.Run, error) {
	root, err := e.cfg.Store.RunGet(ctx, rootID)
	if err != nil {
		return nil, err
	}
	out := []store.Run{root}
	p := store.RunListParams{RootID: root.ID, Limit: MaxPageLimit}
	for {
		page, err := e.cfg.Store.RunList(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("list the family of %s: %w", rootID, err)
		}
		for _, r := range page {
			if r.ID != root.ID {
				out = append(out, r)
			}
		}
		if len(page) < p.Limit {
			return out, nil
		}
		if len(out) > MaxFamilyRuns {
			return nil, fmt.Errorf("list the family of %s: more than %d runs", rootID, MaxFamilyRuns)
		}
		p.After = store.RunCursor(page[len(page)-1])
	}
}

// MaxFamilyRuns bounds the runs Family reads: the sub-agent limits allow
// far fewer in one family.
const MaxFamilyRuns = 100 * MaxPageLimit

// cursor is a position in a listing of approval requests.
type cursor struct {
	created time.Time
	run     string
	call    string
}

func cursorOf(p PendingApproval, created time.Time) string {
	return cursorText(created, p.Call, p.RunID)
}

// cursorText encodes a cursor as URL-safe text without spaces, so that it
// passes through a query string or a shell as it is.
func cursorText(created time.Time, call, run string) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d %s %s", created.UnixMicro(), call, run))
}

func parseCursor(s string) (*cursor, error) {
	if s == "" {
		return nil, nil
	}
	bad := fmt.Errorf("%w: %.80q is not one this listing returned", store.ErrBadCursor, s)
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) > 4*store.MaxNameBytes {
		return nil, bad
	}
	micros, rest, ok1 := strings.Cut(string(raw), " ")
	call, run, ok2 := strings.Cut(rest, " ")
	n, err := strconv.ParseInt(micros, 10, 64)
	if !ok1 || !ok2 || err != nil || run == "" {
		return nil, bad
	}
	return &cursor{created: time.UnixMicro(n).UTC(), run: run, call: call}, nil
}

// callAfter reports whether call key a ("t<turn>c<n>") comes after b.
func callAfter(a, b string) bool {
	ta, ca := callOrder(a)
	tb, cb := callOrder(b)
	return ta > tb || ta == tb && ca > cb
}

func callOrder(key string) (turn, n int) {
	turn, n, _ = hitchtype.ParseCallKey(key)
	return turn, n
}

// ApprovalRequest returns one call's approval request while it waits for
// an answer. It gives ErrApprovalExpired for a request past its deadline
// by the store's clock, and records the lapse if no one has yet (waiting
// at most wait for a live runner; see recordLapse); ErrAnswered for one
// granted or rejected, ErrNoApproval for a call that never needed one,
// ErrUnknownCall, and store.ErrEnded.
func (e *Engine) ApprovalRequest(ctx context.Context, runID, call string, wait time.Duration) (PendingApproval, error) {
	run, err := e.cfg.Store.RunGet(ctx, runID)
	if err != nil {
		return PendingApproval{}, err
	}
	st, now, err := e.foldNow(ctx, runID)
	if err != nil {
		return PendingApproval{}, err
	}
	c, expired, err := checkApproval(st, call, now)
	switch {
	case err != nil:
		return PendingApproval{}, err
	case expired:
		e.recordLapse(ctx, runID, wait)
		return PendingApproval{}, fmt.Errorf("%w: %s (deadline %s)", ErrApprovalExpired, call, c.expires.UTC().Format(time.RFC3339))
	}
	return pendingOf(run, c), nil
}

// recordLapse journals a run's approval requests past their deadline.
// Whoever touches the run next records a lapse (docs/journal.md): a late
// answer looks its request up first, so the look records it, and the run
// goes on from there. It is best effort: a runner busy past wait, or a
// store opened for reading, leaves the lapse to the next toucher.
func (e *Engine) recordLapse(ctx context.Context, runID string, wait time.Duration) {
	_ = e.command(ctx, runID, wait, driveOn, func(r *runner) (reply, err error) {
		err = r.lapse(r.expireApprovals)
		return err, err
	})
}

func pendingOf(run store.Run, c *callState) PendingApproval {
	args := json.RawMessage(c.call.Arguments)
	if !json.Valid(args) {
		args, _ = json.Marshal(c.call.Arguments)
	}
	return PendingApproval{RunID: run.ID, RootID: run.RootID, Agent: run.Agent, Call: c.key, Tool: c.call.Name,
		Arguments: args, Requirement: c.decision.Requirement, Reason: c.decision.Reason, Rule: c.decision.Rule,
		ExpiresAt: c.expires, Input: run.Title}
}
