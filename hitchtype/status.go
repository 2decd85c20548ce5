package hitchtype

// Status is where a run is in its lifecycle.
type Status string

// Run statuses. The last five are terminal.
const (
	StatusQueued          Status = "queued"
	StatusRunning         Status = "running"
	StatusWaiting         Status = "waiting"
	StatusCompleted       Status = "completed"
	StatusFailed          Status = "failed"
	StatusCancelled       Status = "cancelled"
	StatusAnswerInvalid   Status = "answer_invalid"
	StatusBudgetExhausted Status = "budget_exhausted"
)

// Terminal reports whether s ends a run.
func (s Status) Terminal() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusCancelled, StatusAnswerInvalid, StatusBudgetExhausted:
		return true
	}
	return false
}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	switch s {
	case StatusQueued, StatusRunning, StatusWaiting:
		return true
	}
	return s.Terminal()
}

// Statuses returns every status, in lifecycle order.
func Statuses() []Status {
	return []Status{StatusQueued, StatusRunning, StatusWaiting, StatusCompleted, StatusFailed,
		StatusCancelled, StatusAnswerInvalid, StatusBudgetExhausted}
}
