package cluster

import (
	"sync"
	"sync/atomic"
)

// leaderTerm is this node's terms as leader and what it knows of the
// leader: each term's state (leadership: the term's clock and the
// hand-off gate, leader.go), the term's loops (ticks, waiter leases,
// automatic upgrade), the proposals made under the term's clock
// (propose, applyAsLeader, readIndexAsLeader), the commit demands that
// decide whether this node wants commit pushes, and the leader changes
// and leaderless spells this node observed (noleader.go).
//
// A part of Node (see raftReplica).
type leaderTerm struct {
	*Node

	// lead is the current leadership term's state, nil on followers.
	lead atomic.Pointer[leadership]
	// noLeaderSince is when this node last lost (or, from its start, had
	// not yet heard of) a leader, unix ns; 0 while it knows one
	// (noleader.go).
	noLeaderSince atomic.Int64
	// leaderCh is closed and replaced whenever the known leader changes.
	leaderMu sync.Mutex
	leaderCh chan struct{}

	// kick wakes the leader's tick loop after each applied batch.
	kick chan struct{}

	// demands: AddCommitDemand's functions (commit_demand.go).
	demands commitDemands
	leases  waiterLeases // the leader's claims of waiters (waiter_lease.go)
}

func newLeaderTerm(n *Node) *leaderTerm {
	return &leaderTerm{Node: n, leaderCh: make(chan struct{}), kick: make(chan struct{}, 1)}
}
