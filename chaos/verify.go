package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// The kinds of violation Verify reports, one for each promise it checks.
const (
	// DuplicateEffect: a non-replayable tool body ran more than once for
	// one call.
	DuplicateEffect = "duplicate_effect"
	// UnjournaledEffect: a body ran, but its start is not in the run's
	// journal (the write-ahead rule was broken).
	UnjournaledEffect = "unjournaled_effect"
	// LostRun: a run that was started is not in the store, or had not ended
	// when it should have.
	LostRun = "lost_run"
	// JournalGap: a journal's positions are not 1, 2, 3 … up to the run's
	// length.
	JournalGap = "journal_gap"
	// StuckRun: a run is running, but no live lease drives it.
	StuckRun = "stuck_run"
	// ExtraEnding: a run has more than one ending, or an end status
	// without its ending entry last in the journal.
	ExtraEnding = "extra_ending"
)

// Violation is one broken promise.
type Violation struct {
	Kind   string `json:"kind"`
	Run    string `json:"run,omitempty"`
	Call   string `json:"call,omitempty"`
	Detail string `json:"detail"`
}

func (v Violation) String() string {
	s := v.Kind
	if v.Run != "" {
		s += " " + v.Run
	}
	if v.Call != "" {
		s += " " + v.Call
	}
	return s + ": " + v.Detail
}

// VerifyParams say what Verify checks.
type VerifyParams struct {
	// Runs are the ids of every run that was started.
	Runs []string
	// Effects holds one line per body run of the workload's non-replayable
	// tool: "RUN CALL WHO", RUN and CALL naming the call, WHO the process.
	Effects io.Reader
	// Ended, when set, requires every run to have ended: one that has not
	// is lost. Otherwise a run may still be waiting or leased.
	Ended bool
	// MaxViolations bounds the violations listed (the counts are whole);
	// 0 means DefaultMaxViolations.
	MaxViolations int
}

// DefaultMaxViolations is how many violations a report lists at most.
const DefaultMaxViolations = 100

// Report is what Verify found.
type Report struct {
	Runs      int `json:"runs"`
	Completed int `json:"completed"`
	// Ended counts runs that ended otherwise than completed.
	Ended int `json:"ended_otherwise"`
	// Effects counts body runs; Uncertain the calls journaled uncertain
	// (each ran at most once, as the effects show).
	Effects   int `json:"effects"`
	Uncertain int `json:"uncertain"`
	// Counts has every kind of violation, zero or not.
	Counts     map[string]int `json:"violations_by_kind"`
	Violations []Violation    `json:"violations"`
}

// OK says whether no promise was broken.
func (r Report) OK() bool {
	for _, n := range r.Counts {
		if n > 0 {
			return false
		}
	}
	return true
}

func (r *Report) add(limit int, v Violation) {
	r.Counts[v.Kind]++
	if len(r.Violations) < limit {
		r.Violations = append(r.Violations, v)
	}
}

// Verify checks hitch's promises on the runs p names, from the store and
// the effects their tool bodies recorded: no non-replayable body ran twice
// or without its start journaled first, no run is lost, every journal is
// gapless and as long as its run says, no running run is without a live
// lease (by the store's clock), and no run ended more than once. It reads
// every journal whole; an error means it could not read, not a violation.
func Verify(ctx context.Context, st store.Store, p VerifyParams) (Report, error) {
	limit := p.MaxViolations
	if limit <= 0 {
		limit = DefaultMaxViolations
	}
	rep := Report{Runs: len(p.Runs), Counts: map[string]int{}, Violations: []Violation{}}
	for _, k := range []string{DuplicateEffect, UnjournaledEffect, LostRun, JournalGap, StuckRun, ExtraEnding} {
		rep.Counts[k] = 0
	}
	ran := map[[2]string][]string{} // run, call → who ran its body
	if p.Effects != nil {
		sc := bufio.NewScanner(p.Effects)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 {
				return rep, fmt.Errorf("verify: effects line %q: want RUN CALL WHO", sc.Text())
			}
			ran[[2]string{f[0], f[1]}] = append(ran[[2]string{f[0], f[1]}], f[2])
			rep.Effects++
		}
		if err := sc.Err(); err != nil {
			return rep, fmt.Errorf("verify: read effects: %w", err)
		}
	}
	now, err := st.Now(ctx)
	if err != nil {
		return rep, fmt.Errorf("verify: store clock: %w", err)
	}
	started := map[[2]string]bool{}
	known := map[string]bool{}
	for _, id := range p.Runs {
		known[id] = true
		run, err := st.RunGet(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			rep.add(limit, Violation{Kind: LostRun, Run: id, Detail: "started, but the store has no such run"})
			continue
		}
		if err != nil {
			return rep, fmt.Errorf("verify: read run %s: %w", id, err)
		}
		es, err := readJournal(ctx, st, id)
		if errors.Is(err, store.ErrCorrupt) { // the store refuses a journal with a hole
			rep.add(limit, Violation{Kind: JournalGap, Run: id, Detail: err.Error()})
			continue
		}
		if err != nil {
			return rep, fmt.Errorf("verify: %w", err)
		}
		for i, e := range es {
			if e.Pos != int64(i+1) {
				rep.add(limit, Violation{Kind: JournalGap, Run: id, Detail: fmt.Sprintf("entry %d has position %d", i+1, e.Pos)})
				break
			}
		}
		if int64(len(es)) != run.Position {
			rep.add(limit, Violation{Kind: JournalGap, Run: id, Detail: fmt.Sprintf("%d entries, but the run's journal is %d long", len(es), run.Position)})
		}
		endings := 0
		for _, e := range es {
			var c struct{ Call string }
			_ = json.Unmarshal(e.Data, &c)
			switch e.Kind {
			case hitchtype.KindRunEnded:
				endings++
			case hitchtype.KindCallStarted:
				started[[2]string{id, c.Call}] = true
			case hitchtype.KindCallUncertain:
				rep.Uncertain++
			}
		}
		switch {
		case endings > 1:
			rep.add(limit, Violation{Kind: ExtraEnding, Run: id, Detail: fmt.Sprintf("%d ending entries, status %s", endings, run.Status)})
		case run.Status.Terminal() && (endings != 1 || es[len(es)-1].Kind != hitchtype.KindRunEnded):
			rep.add(limit, Violation{Kind: ExtraEnding, Run: id, Detail: fmt.Sprintf("status %s without its ending as the last entry", run.Status)})
		case !run.Status.Terminal() && endings > 0:
			rep.add(limit, Violation{Kind: ExtraEnding, Run: id, Detail: fmt.Sprintf("an ending entry, but status %s", run.Status)})
		}
		switch {
		case run.Status == hitchtype.StatusCompleted:
			rep.Completed++
		case run.Status.Terminal():
			rep.Ended++
		case run.Status == hitchtype.StatusRunning && run.LeaseOwner == "":
			rep.add(limit, Violation{Kind: StuckRun, Run: id, Detail: "running, but no lease is held: nobody drives it"})
		case run.Status == hitchtype.StatusRunning && !run.LeaseExpires.After(now):
			rep.add(limit, Violation{Kind: StuckRun, Run: id, Detail: fmt.Sprintf("running, but the lease of %s expired at %s (store clock %s)",
				run.LeaseOwner, run.LeaseExpires.UTC().Format("15:04:05.000"), now.UTC().Format("15:04:05.000"))})
		case p.Ended:
			rep.add(limit, Violation{Kind: LostRun, Run: id, Detail: fmt.Sprintf("still %s when every run should have ended", run.Status)})
		}
	}
	keys := make([][2]string, 0, len(ran))
	for k := range ran {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) })
	for _, k := range keys {
		who := ran[k]
		if len(who) > 1 {
			rep.add(limit, Violation{Kind: DuplicateEffect, Run: k[0], Call: k[1], Detail: fmt.Sprintf("the body ran %d times (by %s)", len(who), strings.Join(who, ", "))})
		}
		if known[k[0]] && !started[k] {
			rep.add(limit, Violation{Kind: UnjournaledEffect, Run: k[0], Call: k[1], Detail: "the body ran (by " + who[0] + "), but no start is journaled"})
		}
	}
	return rep, nil
}

// readJournal reads a run's journal whole, a page at a time.
func readJournal(ctx context.Context, st store.Store, id string) ([]store.Entry, error) {
	var all []store.Entry
	for {
		var after int64
		if len(all) > 0 {
			after = all[len(all)-1].Pos
		}
		es, err := st.JournalRead(ctx, store.JournalReadParams{RunID: id, After: after, Limit: store.MaxReadLimit})
		if err != nil {
			return nil, fmt.Errorf("read journal %s: %w", id, err)
		}
		all = append(all, es...)
		if len(es) < store.MaxReadLimit {
			return all, nil
		}
	}
}
