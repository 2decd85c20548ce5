//go:build chaosfault

package chaos

import (
	"context"

	"github.com/hitch-dev/hitch/store"
)

// faulty puts a real fault between a node and its store, for the test that
// shows Run catches one: appends and renewals skip the fencing check. Each
// reads the run first and writes under the lease and at the position the
// run has now, whatever the runner holds, as a store that forgot its fence
// would. A node paused past its lease thus goes on writing beside the node
// that took its runs over.
func faulty(st store.Store) store.Store { return unfenced{st} }

type unfenced struct{ store.Store }

func (u unfenced) JournalAppend(ctx context.Context, p store.JournalAppendParams) (store.Appended, error) {
	if cur, err := u.RunGet(ctx, p.RunID); err == nil {
		p.Token, p.After = cur.LeaseToken, cur.Position
	}
	return u.Store.JournalAppend(ctx, p)
}

func (u unfenced) LeaseRenew(ctx context.Context, p store.LeaseRenewParams) (store.Run, error) {
	if cur, err := u.RunGet(ctx, p.RunID); err == nil && cur.LeaseOwner != "" {
		p.Token, p.Owner = cur.LeaseToken, cur.LeaseOwner
	}
	return u.Store.LeaseRenew(ctx, p)
}

func (u unfenced) LeaseRenewMany(ctx context.Context, p store.LeaseRenewManyParams) ([]store.LeaseRenewal, error) {
	out := make([]store.LeaseRenewal, 0, len(p.Leases))
	for _, l := range p.Leases {
		r, err := u.LeaseRenew(ctx, store.LeaseRenewParams{RunID: l.RunID, Owner: p.Owner, Token: l.Token, TTL: p.TTL})
		out = append(out, store.LeaseRenewal{RunID: l.RunID, Renewed: err == nil, CancelRequested: err == nil && r.CancelRequested})
	}
	return out, nil
}
