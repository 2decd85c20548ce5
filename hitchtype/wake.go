package hitchtype

import (
	"encoding/json"
	"time"
)

// Journal entry kinds of armed wakes and pending calls. The data of each
// is the struct of the same name.
const (
	// KindWakeArmed: an await_event call parked the run until its event
	// is delivered or its deadline passes.
	KindWakeArmed = "wake.armed"
	// KindWakeDelivered: the event came in time; the call's result is its
	// data.
	KindWakeDelivered = "wake.delivered"
	// KindWakeExpired: the deadline passed first; the model is told the
	// event did not come.
	KindWakeExpired = "wake.expired"
	// KindCallPending: an external call started: its result will come
	// from outside the run.
	KindCallPending = "call.pending"
	// KindCallCompleted: an outside system gave a pending or held call
	// its result.
	KindCallCompleted = "call.completed"
	// KindCallTimedOut: a pending call got no result by its deadline; the
	// model is told.
	KindCallTimedOut = "call.timed_out"
)

// Defaults of waits; defaults.Table lists them.
const (
	// DefaultMaxWait bounds the deadline of an armed wake and of a pending
	// call, from when it starts.
	DefaultMaxWait = 7 * 24 * time.Hour
	// DefaultPendingCallTimeout is how long an external call waits for
	// its result when its tool names no timeout.
	DefaultPendingCallTimeout = 24 * time.Hour
	// MaxEventNameBytes bounds the name of an awaited event.
	MaxEventNameBytes = 128
	// MaxWakeDataBytes bounds the data delivered with an event.
	MaxWakeDataBytes = 64 << 10
)

// WakeArmed records a wake armed by call Call: the run waits for Event
// until Deadline, by the store's clock.
type WakeArmed struct {
	Call     string    `json:"call"`
	Event    string    `json:"event"`
	Deadline time.Time `json:"deadline"`
}

// WakeDelivered records the delivery of an armed wake's event.
type WakeDelivered struct {
	Call  string `json:"call"`
	Event string `json:"event"`
	// Data is what the deliverer sent with the event (JSON), if anything.
	Data json.RawMessage `json:"data,omitempty"`
	By   string          `json:"by,omitempty"`
}

// WakeExpired records an armed wake whose deadline passed first.
type WakeExpired struct {
	Call     string    `json:"call"`
	Event    string    `json:"event"`
	Deadline time.Time `json:"deadline"`
}

// CallPending records the start of an external call: hitch runs no body,
// and the run waits for CompleteCall until Deadline.
type CallPending struct {
	Call     string    `json:"call"`
	Deadline time.Time `json:"deadline"`
}

// CallCompleted records a result given from outside the run to a pending
// call or to a call held by a hook. Error, when set, is a definite
// failure the model sees; otherwise Output is the result.
type CallCompleted struct {
	Call   string `json:"call"`
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
	By     string `json:"by,omitempty"`
}

// CallTimedOut records a pending call that got no result in time.
type CallTimedOut struct {
	Call     string    `json:"call"`
	Deadline time.Time `json:"deadline"`
}

// Completion completes a pending call, or a call held by a pre-tool hook,
// from outside the run. Exactly one of Output, Error or Execute applies:
// Execute releases a held call so its body runs; Error fails the call;
// otherwise Output is its result.
type Completion struct {
	Call    string `json:"call"`
	Output  string `json:"output,omitempty"`
	Error   string `json:"error,omitempty"`
	Execute bool   `json:"execute,omitempty"`
	// By names who completed it, for the journal.
	By string `json:"by,omitempty"`
}

// Wait kinds: what a parked run waits on.
const (
	WaitEvent     = "event"     // an armed wake
	WaitExternal  = "external"  // a pending external call
	WaitHeld      = "held"      // a call held by a pre-tool hook
	WaitApproval  = "approval"  // an approval request
	WaitChildren  = "children"  // a sub-agent run
	WaitUncertain = "uncertain" // an uncertain effect to reconcile
)

// Wait is one thing a parked run waits on, and until when.
type Wait struct {
	Kind string `json:"kind"`
	Call string `json:"call"`
	Tool string `json:"tool,omitempty"`
	// Event is the awaited event, for an armed wake.
	Event string `json:"event,omitempty"`
	// Until is the deadline by the store's clock; nil means none.
	Until *time.Time `json:"until,omitempty"`
}
