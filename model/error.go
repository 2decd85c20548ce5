package model

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Kind classifies a model failure for the engine's retry policy.
type Kind string

// The failure kinds. Unreachable, TimedOut, RateLimited and Overloaded are
// retryable; every other kind fails the call for good.
const (
	KindUnreachable    Kind = "unreachable"     // connection refused, reset, DNS
	KindTimedOut       Kind = "timed_out"       // the call exceeded its deadline
	KindRateLimited    Kind = "rate_limited"    // 429; RetryAfter may be set
	KindOverloaded     Kind = "overloaded"      // 5xx, provider overloaded
	KindInvalidRequest Kind = "invalid_request" // 400, 404, 422: the request is wrong
	KindUnauthorized   Kind = "unauthorized"    // 401, 403: the key is wrong or lacks rights
	KindMalformed      Kind = "malformed"       // the provider's answer could not be understood
	KindCancelled      Kind = "cancelled"       // the caller cancelled the call
)

// Retryable reports whether a failure of this kind may succeed when tried
// again.
func (k Kind) Retryable() bool {
	switch k {
	case KindUnreachable, KindTimedOut, KindRateLimited, KindOverloaded:
		return true
	}
	return false
}

// Error is a classified model failure. Message must never hold a secret:
// providers scrub keys before they build one.
type Error struct {
	Kind     Kind
	Provider string
	// Status is the HTTP status, when there was one.
	Status int
	// Message is the provider's explanation, scrubbed.
	Message string
	// RetryAfter is the provider's requested delay before the next attempt;
	// zero when it gave none.
	RetryAfter time.Duration
	// Err is the underlying error, if any.
	Err error
}

func (e *Error) Error() string {
	s := string(e.Kind)
	if e.Provider != "" {
		s = e.Provider + ": " + s
	}
	if e.Status != 0 {
		s += fmt.Sprintf(" (status %d)", e.Status)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of err: the Kind of an *Error in its chain, or
// KindUnreachable for anything else, since an unclassified failure is most
// likely a transport problem.
func KindOf(err error) Kind {
	var me *Error
	switch {
	case errors.As(err, &me):
		return me.Kind
	case errors.Is(err, context.DeadlineExceeded):
		return KindTimedOut
	case errors.Is(err, context.Canceled):
		return KindCancelled
	}
	return KindUnreachable
}

// RetryAfterOf returns the provider's requested delay in err's chain, or 0.
func RetryAfterOf(err error) time.Duration {
	var me *Error
	if errors.As(err, &me) {
		return me.RetryAfter
	}
	return 0
}
