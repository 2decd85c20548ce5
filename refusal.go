package hitch

import "github.com/hitch-dev/hitch/internal/node"

// Refusal returns what a face may tell a caller of err: the documented
// error that err wraps (ErrNotFound, ErrAnswered …, or the
// *ForbiddenError), whose text is fixed and repeats nothing the caller sent
// — err's own text names ids and may hold secrets the caller typed. It
// returns nil when err is none of them: an internal error, whose text
// belongs in a log. A *sessions.MessageStateError is not among them: say its State.
func Refusal(err error) error { return node.Refusal(err) }
