package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/auth"
)

// LeaderTransferer is the optional leadership transfer of a Locker
// (cluster.Node implements it).
type LeaderTransferer interface {
	TransferLeadership(ctx context.Context, id string) (api.TransferResult, error)
}

func (s *server) transferLeader(w http.ResponseWriter, r *http.Request, lt LeaderTransferer) {
	var req api.TransferRequest
	if !s.decode(w, r, &req) {
		return
	}
	res, err := lt.TransferLeadership(r.Context(), req.ID)
	s.cfg.Audit.Event(auth.EventTransferLeader, userName(r), r.RemoteAddr, "member", req.ID, "leader", res.Leader, "error", errText(err))
	if err == nil {
		s.cfg.Logger.Info("leadership transferred", "user", userName(r), "remote", r.RemoteAddr, "from", res.Previous, "to", res.Leader)
	}
	s.reply(w, r, res, err)
}

// memberAddrWait bounds how long GET /v1/status waits for members this
// node never asked for their addresses (once per member and node
// lifetime; later answers come from the node's cache).
const memberAddrWait = time.Second

// addMemberAddrs fills each member's HTTP address and the leader's, from
// the node's knowledge of its peers, when the Locker has it.
func (s *server) addMemberAddrs(ctx context.Context, st *api.Status) {
	pl, ok := s.l.(PeerLister)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, memberAddrWait)
	defer cancel()
	addrs := map[string]string{}
	for _, p := range pl.PeerHTTPAddrs(ctx) {
		if p.HTTP != "" {
			addrs[p.ID] = p.HTTP
		}
	}
	for i := range st.Members {
		st.Members[i].HTTPAddr = addrs[st.Members[i].ID]
	}
	st.LeaderHTTPAddr = addrs[st.Leader]
}
