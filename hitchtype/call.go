package hitchtype

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/hitch-dev/hitch/policy"
)

// CallRecord is one tool call's lifecycle as its run's journal tells it:
// what the model asked for, what the policy decided and who answered,
// when the body started (and on which node), and how it ended. Build one
// with NewCallRecord and Add the run's entries from the call's reply on.
type CallRecord struct {
	// Key is the journal's id of the call (CallKey), ProviderID the
	// provider's id of it in the reply.
	Key        string    `json:"key"`
	ProviderID string    `json:"provider_id,omitempty"`
	Tool       string    `json:"tool"`
	Arguments  string    `json:"arguments"`
	Turn       int       `json:"turn"`
	AskedAt    time.Time `json:"asked_at"` // the reply's time
	// Decision is the policy's (or a hook's hold); DecidedAt when.
	Decision  *CallDecided `json:"decision,omitempty"`
	DecidedAt *time.Time   `json:"decided_at,omitempty"`
	// Answer is the approval's answer: "granted", "rejected" or
	// "expired".
	Answer       string     `json:"answer,omitempty"`
	AnsweredBy   string     `json:"answered_by,omitempty"`
	AnswerReason string     `json:"answer_reason,omitempty"`
	AnsweredAt   *time.Time `json:"answered_at,omitempty"`
	// StartedAt is when the body last started, Attempts how many times,
	// and Node the node that started it last.
	StartedAt *time.Time `json:"started_at,omitempty"`
	Attempts  int        `json:"attempts,omitempty"`
	Node      string     `json:"node,omitempty"`
	// State is where the call stands: "asked", "decided", "denied",
	// "waiting" (for an approval or an outside result), "started",
	// "settled", "failed", "uncertain" or "reconciled".
	State string `json:"state"`
	// Output is the result the model saw; Error a failure it saw;
	// Uncertain why the effect is unknown.
	Output    string     `json:"output,omitempty"`
	Error     string     `json:"error,omitempty"`
	Uncertain string     `json:"uncertain,omitempty"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// Reconciled is how someone settled an uncertain call.
	Reconciled *CallReconciled `json:"reconciled,omitempty"`
	// Positions are the journal positions of the call's entries.
	Positions []int64 `json:"positions"`
}

// NewCallRecord starts the record of call key from the model.reply entry
// that asked for it (at position pos, time at); ok is false when the
// reply holds no such call.
func NewCallRecord(key string, pos int64, at time.Time, reply ModelReply) (CallRecord, bool) {
	turn, n, ok := ParseCallKey(key)
	if !ok || reply.Turn != turn || n > len(reply.Reply.ToolCalls) {
		return CallRecord{}, false
	}
	tc := reply.Reply.ToolCalls[n-1]
	return CallRecord{Key: key, ProviderID: tc.ID, Tool: tc.Name, Arguments: tc.Arguments, Turn: turn,
		AskedAt: at, State: "asked", Positions: []int64{pos}}, true
}

// Add folds one journal entry into the record; entries of other calls
// and other kinds are ignored. An entry that does not decode is an
// error.
func (c *CallRecord) Add(pos int64, kind string, at time.Time, data json.RawMessage) error {
	var head struct {
		Call string `json:"call"`
	}
	if json.Unmarshal(data, &head) != nil || head.Call != c.Key {
		return nil
	}
	decode := func(v any) error {
		if err := json.Unmarshal(data, v); err != nil {
			return fmt.Errorf("call %s: entry %d (%s): %w", c.Key, pos, kind, err)
		}
		return nil
	}
	when := at
	end := func(state string) { c.State, c.EndedAt = state, &when }
	switch kind {
	case KindCallDecided:
		var d CallDecided
		if err := decode(&d); err != nil {
			return err
		}
		c.Decision, c.DecidedAt = &d, &when
		switch d.Verdict {
		case policy.Deny:
			c.Error = d.Reason
			end("denied")
		case policy.RequireApproval:
			c.State = "waiting"
		default:
			c.State = "decided"
		}
	case KindApprovalGrant, KindApprovalDeny:
		var d ApprovalAnswer
		if err := decode(&d); err != nil {
			return err
		}
		c.Answer, c.AnsweredBy, c.AnswerReason, c.AnsweredAt = "granted", d.By, d.Reason, &when
		c.State = "decided"
		if kind == KindApprovalDeny {
			c.Answer = "rejected"
			end("denied")
		}
	case KindApprovalLapse:
		c.Answer, c.AnsweredAt = "expired", &when
		end("denied")
	case KindCallStarted:
		var d CallStarted
		if err := decode(&d); err != nil {
			return err
		}
		c.StartedAt, c.Attempts, c.Node, c.State = &when, d.Attempt, d.Node, "started"
	case KindCallPending, KindWakeArmed:
		c.StartedAt, c.State = &when, "waiting"
	case KindCallSettled:
		var d CallSettled
		if err := decode(&d); err != nil {
			return err
		}
		c.Output = d.Output
		end("settled")
	case KindCallCompleted:
		var d CallCompleted
		if err := decode(&d); err != nil {
			return err
		}
		c.Output, c.Error = d.Output, d.Error
		if d.Error != "" {
			end("failed")
		} else {
			end("settled")
		}
	case KindWakeDelivered:
		var d WakeDelivered
		if err := decode(&d); err != nil {
			return err
		}
		c.Output = string(d.Data)
		end("settled")
	case KindCallFailed, KindCallRejected, KindCallTimedOut, KindWakeExpired:
		var d CallFailed
		if err := decode(&d); err != nil {
			return err
		}
		c.Error = d.Error
		if c.Error == "" {
			c.Error = kind
		}
		end("failed")
	case KindCallUncertain:
		var d CallUncertain
		if err := decode(&d); err != nil {
			return err
		}
		c.Uncertain = d.Reason
		end("uncertain")
	case KindCallReconcile:
		var d CallReconciled
		if err := decode(&d); err != nil {
			return err
		}
		c.Reconciled = &d
		end("reconciled")
	default:
		return nil
	}
	c.Positions = append(c.Positions, pos)
	return nil
}
