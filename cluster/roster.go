package cluster

import "sync/atomic"

// roster is the cluster's members as this node sees them: joining and
// leaving (membership.go), adding and removing voters with their
// version check (version.go), the peers' addresses and last contacts
// (nodeinfo.go, contact.go), and who counts as a member for the peer
// RPCs (peerauth.go).
//
// A part of Node (see raftReplica).
type roster struct {
	*Node

	// unjoined: this node started without raft state and has not heard
	// from a leader since; it is no member yet, so requests are refused
	// at once instead of waiting for a leader (membership.go).
	unjoined atomic.Bool
	// hadState: Start found raft state in DataDir (Join does nothing).
	hadState bool

	peerInfo nodeInfoCache // PeerAddrs' answers (nodeinfo.go)
}
