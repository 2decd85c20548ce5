package hitchtest

import (
	"encoding/json"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// Calls is what a run's journal says of its calls, by call id.
type Calls struct {
	// Endings counts the run's terminal entries.
	Endings int
	// Open are the calls started and not yet settled, failed or uncertain.
	Open map[string]bool
	// Settled, Uncertain and Reconciled are the calls with such an entry.
	Settled, Uncertain, Reconciled map[string]bool
}

// CallsOf reads the calls of a run's journal entries, in order.
func CallsOf(es []store.Entry) Calls {
	c := Calls{Open: map[string]bool{}, Settled: map[string]bool{}, Uncertain: map[string]bool{}, Reconciled: map[string]bool{}}
	for _, e := range es {
		var d struct{ Call string }
		_ = json.Unmarshal(e.Data, &d)
		switch e.Kind {
		case hitchtype.KindRunEnded:
			c.Endings++
		case hitchtype.KindCallStarted:
			c.Open[d.Call] = true
		case hitchtype.KindCallSettled:
			c.Settled[d.Call] = true
			delete(c.Open, d.Call)
		case hitchtype.KindCallFailed:
			delete(c.Open, d.Call)
		case hitchtype.KindCallUncertain:
			c.Uncertain[d.Call] = true
			delete(c.Open, d.Call)
		case hitchtype.KindCallReconcile:
			c.Reconciled[d.Call] = true
		}
	}
	return c
}
