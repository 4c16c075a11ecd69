package client

import (
	"context"
	"net/http"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/wire"
)

// Upgrade asks the cluster to activate the highest cluster version every
// member runs (POST /v1/cluster/upgrade; admin). It fails with
// api.ErrConflict when a member does not answer; with nothing newer to
// activate it reports the active version unchanged. Servers that predate
// cluster versions answer api.ErrNotFound.
func (c *admin) Upgrade(ctx context.Context) (api.UpgradeResult, error) {
	var res api.UpgradeResult
	_, err := c.do(ctx, call{op: "cluster upgrade", method: http.MethodPost, path: wire.PathClusterUpgrade, out: &res})
	return res, err
}
