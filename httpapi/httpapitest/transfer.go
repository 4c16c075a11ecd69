package httpapitest

import (
	"context"
	"fmt"

	"github.com/locknode/locknode/api"
)

// TransferLeadership refuses as cluster.Node does for ids it knows to be
// wrong (not a member, itself); the fake is one node and has no one to
// hand over to, so it refuses a member's id too.
func (f *Fake) TransferLeadership(ctx context.Context, id string) (api.TransferResult, error) {
	if err := f.begin("TransferLeadership", ""); err != nil {
		return api.TransferResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if id == fakeID {
		return api.TransferResult{}, fmt.Errorf("%w: %q is already the leader", api.ErrBadRequest, id)
	}
	for _, m := range f.members {
		if id == "" || m.ID == id {
			return api.TransferResult{}, fmt.Errorf("%w: the fake's members are names only; it keeps leading", api.ErrBadRequest)
		}
	}
	if id == "" {
		return api.TransferResult{}, fmt.Errorf("%w: there is no other voter", api.ErrBadRequest)
	}
	return api.TransferResult{}, fmt.Errorf("%w: %q is not in the configuration", api.ErrNotFound, id)
}
