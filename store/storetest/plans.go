package storetest

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Statements is the set of statements a driver's recording connections
// sent, for CheckPlans; it is safe for concurrent use, and its zero value
// is empty and ready.
type Statements struct {
	mu   sync.Mutex
	seen map[string]bool
}

// Add records the statement q.
func (s *Statements) Add(q string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[q] = true
}

// Sorted returns the statements recorded, each once, in order.
func (s *Statements) Sorted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.seen))
	for q := range s.seen {
		out = append(out, q)
	}
	slices.Sort(out)
	return out
}

// PlanCheck says how a driver's query plans are read and judged by
// CheckPlans.
type PlanCheck struct {
	// Hot reports the statements to explain: those that read or write the
	// runs or the journal.
	Hot func(q string) bool
	// Explain returns a statement's plan as text.
	Explain func(q string) (string, error)
	// FullScan names the step of a plan that reads runs or the journal in
	// a way that grows with the table, or "".
	FullScan func(q, plan string) string
	// Want are fragments that some recorded statement must hold, so that
	// a recording that caught nothing cannot pass.
	Want []string
}

// CheckPlans explains every data statement of stmts (recorded while the
// conformance suite ran on the driver) that c.Hot matches, on a store the
// driver filled, and fails for each plan c.FullScan refuses. With
// HITCH_PLANS set it logs every plan.
func CheckPlans(t *testing.T, stmts []string, c PlanCheck) {
	t.Helper()
	checked := 0
	for _, q := range stmts {
		if !dataStatement(q) || !c.Hot(q) {
			continue
		}
		checked++
		plan, err := c.Explain(q)
		if err != nil {
			t.Errorf("explain %s: %v", OneLine(q), err)
			continue
		}
		if os.Getenv("HITCH_PLANS") != "" {
			t.Logf("%s\n%s", OneLine(q), plan)
		}
		if bad := c.FullScan(q, plan); bad != "" {
			t.Errorf("full scan: %s\n    %s\n%s", bad, OneLine(q), plan)
		}
	}
	for _, want := range c.Want {
		if !slices.ContainsFunc(stmts, func(q string) bool { return strings.Contains(OneLine(q), want) }) {
			t.Errorf("no recorded statement contains %q", want)
		}
	}
	if checked < 40 {
		t.Errorf("only %d statements on runs or the journal were recorded", checked)
	}
	t.Logf("%s", fmt.Sprintf("%d statements recorded, %d on runs or the journal explained", len(stmts), checked))
}

// dataStatement reports a statement that reads or writes rows; schema
// changes, pragmas, settings and transaction control are not.
func dataStatement(q string) bool {
	head := strings.ToUpper(strings.TrimSpace(q))
	for _, verb := range []string{"SELECT", "INSERT", "UPDATE", "DELETE", "WITH"} {
		if strings.HasPrefix(head, verb) {
			return true
		}
	}
	return false
}

// OneLine folds a statement's white space, to print or match it.
func OneLine(q string) string { return strings.Join(strings.Fields(q), " ") }
