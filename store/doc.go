// Package store is hitch's durable backend seam.
//
// A Store keeps runs and their journals. The journal is append-only and
// ordered; a run's state is a fold over it. Writes to a run are fenced: every
// append names the lease token it holds and the journal position it expects,
// and the store refuses any other, so two runners can never both advance one
// run.
//
// Lease states of a run:
//
//	queued ──claim──► running (leased: owner, token, expiry)
//	   ▲                 │ append with status waiting/queued releases the lease
//	   │                 ▼
//	   └──── wake ──── waiting (no lease; claimable when WakeAt is due,
//	                            or by an explicit claim of its id)
//
//	running ── append with a terminal status ──► terminal (never changes again)
//
//	running ── LeaseRelease ──► running, unleased (due at once for a claim)
//
// A terminal append also asks the run's live children to cancel and wakes a
// waiting parent, in the same transaction, so a family's cancellation is as
// durable as its parent's end and a parent learns of a child's end through
// the store. Budget charges ride on appends (JournalAppendParams.Charge), so
// they are fenced and counted exactly once.
//
// A claim increments the run's token, so a runner that lost its lease (it
// expired and someone else claimed) is refused on its next append or renew
// with ErrFenced. Every deadline is judged by the store's clock (Now).
//
// Drivers live in sub-packages (sqlite, and postgres later) and all pass the
// shared suite in storetest.
package store
