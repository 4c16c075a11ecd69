package cluster

import (
	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/transport"
)

// leanRaftVersion is the cluster version from which a node sends raft's
// RPCs in the lean framing (transport.LeanRaft). A release before it
// closes such a connection (an unknown connection type), so the framing
// is used only once every member runs a release that accepts it; every
// release from it on accepts both framings, whatever the active version.
const leanRaftVersion = 3

// leanStreamer is a Transport that carries the lean framing
// (*transport.Transport does). A Transport without it (a test's or a
// benchmark's own) keeps raft's own framing.
type leanStreamer interface {
	LeanRaftStreamLayer() raft.StreamLayer
}

// newRaftNet wraps raft's own transport nt, adding the lean framing when
// the node's Transport carries it.
func (n *Node) newRaftNet(nt *raft.NetworkTransport) *raftNet {
	ls, ok := n.tr.(leanStreamer)
	if !ok {
		return newRaftNet(nt)
	}
	return newLeanRaftNet(nt, transport.LeanRaftConfig{
		Stream: ls.LeanRaftStreamLayer(),
		// The same as raft's own transport (startRaft): one AppendEntries
		// in flight per follower.
		Timeout:     n.cfg.RaftIOTimeout,
		MaxPool:     3,
		MaxInFlight: 1,
		Logger:      n.cfg.Logger.Named("raft-lean"),
	}, n.leanRaftActive)
}

// leanRaftActive reports whether leanRaftVersion is active. It is asked
// on the replication path until it first holds (raftNet latches it: the
// version is never lowered), so it never waits for the table's lock: an
// apply holding it only postpones the switch to the next RPC.
func (n *Node) leanRaftActive() bool {
	if !n.mu.TryRLock() {
		return false
	}
	defer n.mu.RUnlock()
	return n.table.Version() >= leanRaftVersion
}
