package httpapitest

import (
	"context"

	"github.com/locknode/locknode/api"
)

// Upgrade implements httpapi.Upgrader for a one-node cluster: there is
// no other member, so nothing newer than the table's version is ever
// activated.
func (f *Fake) Upgrade(ctx context.Context) (api.UpgradeResult, error) {
	if err := f.begin("Upgrade", ""); err != nil {
		return api.UpgradeResult{}, err
	}
	st, err := f.l.Status(ctx)
	if err != nil {
		return api.UpgradeResult{}, err
	}
	return api.UpgradeResult{Before: st.ClusterVersion, ClusterVersion: st.ClusterVersion,
		Members: map[string]string{fakeID: st.ClusterVersions}}, nil
}
