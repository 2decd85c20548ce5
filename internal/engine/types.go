package engine

import "github.com/hitch-dev/hitch/hitchtype"

// The journal's kinds and payloads are public, in hitchtype; the engine
// names them without the package prefix.
const (
	KindRunStarted    = hitchtype.KindRunStarted
	KindContext       = hitchtype.KindContext
	KindModelAttempt  = hitchtype.KindModelAttempt
	KindModelReply    = hitchtype.KindModelReply
	KindModelFailed   = hitchtype.KindModelFailed
	KindModelLost     = hitchtype.KindModelLost
	KindCompacted     = hitchtype.KindCompacted
	KindCallDecided   = hitchtype.KindCallDecided
	KindCallRejected  = hitchtype.KindCallRejected
	KindCallHooked    = hitchtype.KindCallHooked
	KindCallStarted   = hitchtype.KindCallStarted
	KindCallSettled   = hitchtype.KindCallSettled
	KindCallFailed    = hitchtype.KindCallFailed
	KindCallUncertain = hitchtype.KindCallUncertain
	KindCallLost      = hitchtype.KindCallLost
	KindCallReconcile = hitchtype.KindCallReconcile
	KindAnswerRefused = hitchtype.KindAnswerRefused
	KindHookDecided   = hitchtype.KindHookDecided
	KindApprovalGrant = hitchtype.KindApprovalGrant
	KindApprovalDeny  = hitchtype.KindApprovalDeny
	KindApprovalLapse = hitchtype.KindApprovalLapse
	KindRootGranted   = hitchtype.KindRootGranted
	KindRootRevoked   = hitchtype.KindRootRevoked
	KindRunWaiting    = hitchtype.KindRunWaiting
	KindRunEnded      = hitchtype.KindRunEnded
	KindWakeArmed     = hitchtype.KindWakeArmed
	KindWakeDelivered = hitchtype.KindWakeDelivered
	KindWakeExpired   = hitchtype.KindWakeExpired
	KindCallPending   = hitchtype.KindCallPending
	KindCallCompleted = hitchtype.KindCallCompleted
	KindCallTimedOut  = hitchtype.KindCallTimedOut
	// KindSessionSteered is a session message that joined the run.
	KindSessionSteered = hitchtype.KindSessionSteered
)

type (
	Limits           = hitchtype.Limits
	RunStarted       = hitchtype.RunStarted
	ForkedFrom       = hitchtype.ForkedFrom
	Context          = hitchtype.Context
	ModelAttempt     = hitchtype.ModelAttempt
	ModelReply       = hitchtype.ModelReply
	ModelFailed      = hitchtype.ModelFailed
	Compacted        = hitchtype.Compacted
	ModelInterrupted = hitchtype.ModelInterrupted
	CallDecided      = hitchtype.CallDecided
	ApprovalAnswer   = hitchtype.ApprovalAnswer
	ApprovalExpired  = hitchtype.ApprovalExpired
	CallRejected     = hitchtype.CallRejected
	CallHooked       = hitchtype.CallHooked
	CallStarted      = hitchtype.CallStarted
	CallSettled      = hitchtype.CallSettled
	CallFailed       = hitchtype.CallFailed
	CallUncertain    = hitchtype.CallUncertain
	CallLost         = hitchtype.CallLost
	CallReconciled   = hitchtype.CallReconciled
	AnswerRefused    = hitchtype.AnswerRefused
	HookDecided      = hitchtype.HookDecided
	RootChanged      = hitchtype.RootChanged
	RunWaiting       = hitchtype.RunWaiting
	Outcome          = hitchtype.Outcome
	Usage            = hitchtype.Usage
	Reconciliation   = hitchtype.Reconciliation
	PendingApproval  = hitchtype.PendingApproval
	SessionSteered   = hitchtype.SessionSteered
	WakeArmed        = hitchtype.WakeArmed
	WakeDelivered    = hitchtype.WakeDelivered
	WakeExpired      = hitchtype.WakeExpired
	CallPending      = hitchtype.CallPending
	CallCompleted    = hitchtype.CallCompleted
	CallTimedOut     = hitchtype.CallTimedOut
	Completion       = hitchtype.Completion
	Wait             = hitchtype.Wait
)

// Infinite, as a timeout, leaves a wait unbounded.
const Infinite = hitchtype.Infinite
