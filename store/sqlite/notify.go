package sqlite

import (
	"sync"

	"github.com/hitch-dev/hitch/store"
)

var _ store.Notifier = (*Store)(nil)

// notifier is the store's store.Notifier. Every write of this process goes
// through the one writer, so the writer knows, at the commit that makes
// them durable, which writes may have made a run due: it signals then,
// with no listener, connection or poll of its own. Writes of other
// processes on the same file are not seen; their runs are found by the
// nodes' sweep, which polls.
type notifier struct {
	once sync.Once
	ch   chan struct{}
}

// wake is the channel, made on first use.
func (n *notifier) wake() chan struct{} {
	n.once.Do(func() { n.ch = make(chan struct{}, 1) })
	return n.ch
}

// signal wakes the receiver without ever blocking: a wake already pending
// stands for this one too.
func (n *notifier) signal() {
	select {
	case n.wake() <- struct{}{}:
	default:
	}
}

// Wake implements store.Notifier for this process: the channel receives
// after each commit that created a run, released a lease (with a status
// change or alone), made a waiting run due (a parent whose child ended, a
// child asked to cancel with it) or recorded a cancel request. Runs
// created, released or woken by another process sharing the file are not
// signalled, nor wake times that come due: a node's sweep interval bounds
// how late it sees those.
func (s *Store) Wake() <-chan struct{} { return s.notify.wake() }

// mayBeDue marks the write being applied as one that may have made a run
// due: the writer signals Wake once its transaction commits. A write
// rolled back afterwards still signals; a wake is a hint.
func (tx *wtx) mayBeDue() { tx.due = true }
