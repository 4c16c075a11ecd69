package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/internal/tlsutil"
	"github.com/locknode/locknode/transport"
)

// errNotMember refuses an RPC from a peer whose certificate names no
// current member.
var errNotMember = errors.New("cluster: peer is not a member")

// authorizeRPC decides whether the peer that sent req, of kind k (nil: a
// kind this binary does not serve), may have it served. Over mutual TLS
// the peer is the node its certificate names (tlsutil.NodeID), and k.auth
// says who may call it (the handshake has already checked the certificate
// against the CA); an unknown kind only a member learns is unknown.
// Without TLS there is no identity to check: whoever reaches the port is
// trusted, which is why cmd/locknode warns when that port is not on
// loopback.
func (n *Node) authorizeRPC(ctx context.Context, k *rpcKind, req []byte) error {
	cert, secured := transport.PeerCertificate(ctx)
	if !secured {
		return nil
	}
	id := tlsutil.NodeID(cert)
	if id != "" && n.isMember(id) {
		return nil
	}
	switch {
	case id == "" || k == nil:
	case k.auth == authMemberOrUnjoined && n.unjoined.Load():
		// A node not joined yet knows no members, and the leader that is
		// about to add it asks this first (AddVoter's check); the answer
		// holds only this node's own addresses.
		return nil
	case k.auth == authMemberOrJoiner:
		d := fsm.NewDecoder(req[1:])
		if d.Str() == id && d.Err() == nil {
			return nil
		}
	}
	n.metrics.rpcRefused.WithLabelValues(rpcName(req[0])).Inc()
	n.log.Warn("refused rpc from a peer that is not a member", "peer", id, "rpc", rpcName(req[0]))
	return fmt.Errorf("%w: %q", errNotMember, id)
}

// isMember reports whether id is in the latest raft configuration
// (committed or not: a node being added is one).
func (n *roster) isMember(id string) bool {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == raft.ServerID(id) {
			return true
		}
	}
	return false
}
