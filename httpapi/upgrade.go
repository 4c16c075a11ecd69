package httpapi

import (
	"context"
	"net/http"

	"github.com/locknode/locknode/api"
)

// Upgrader is a Locker that can activate a newer cluster version
// (cluster.Node).
type Upgrader interface {
	Upgrade(ctx context.Context) (api.UpgradeResult, error)
}

func (s *server) upgrade(w http.ResponseWriter, r *http.Request, u Upgrader) {
	res, err := u.Upgrade(r.Context())
	if res.ClusterVersion != res.Before {
		s.cfg.Logger.Info("cluster version activated", "user", userName(r), "remote", r.RemoteAddr, "version", res.ClusterVersion, "was", res.Before)
	}
	s.reply(w, r, res, err)
}
