package cluster

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/fsm"
)

// raftReplica is the node's table behind raft: the raft server and its
// storage, the FSM table the log is applied to (fsm_adapter.go), the
// applied index and its waiters, the lower bound of the cluster clock
// that the applied entries give (clockFloor), snapshots
// (snapshot_export.go) and the halt of a node that cannot apply what it
// is sent (version.go).
//
// It is one of the parts a Node composes (forwarder, leaderTerm, roster
// are the others). Each part owns its state; it reaches the rest of the
// node through the embedded *Node, and its methods name the receiver n
// as the node's own do, so a method reads the same on whichever part it
// lives.
type raftReplica struct {
	*Node

	raft   *raft.Raft
	store  *raftStorage  // log and stable store (logstore.go)
	logs   raft.LogStore // store.logs
	rtrans *raftNet

	// mu guards table: Apply takes it for writing, reads and snapshots
	// for reading.
	mu     sync.RWMutex
	table  *fsm.Table
	limits fsm.Config // the table's limits, for cheap early checks
	// changes: AddChangeDemand's functions (change_demand.go).
	changes commitDemands

	// applied is the index of the last log entry the table has seen
	// (commands and configuration changes); appliedCh is closed and
	// replaced whenever it grows.
	appliedMu sync.Mutex
	applied   uint64
	appliedCh chan struct{}
	// lastApplyTime/lastApplyMono anchor this node's lower bound of the
	// cluster clock (clockFloor): an applied entry's time and this
	// node's monotonic reading when it stored it (or applied it, if
	// stored before this process began): always the latest applied
	// entry (setApplied says why).
	lastApplyTime int64
	lastApplyMono time.Time
	// storeTimes is when this node stored each entry not yet applied.
	storeTimes storeTimes
	// storeHealth is the outcome of the log store's latest writes (Ready).
	storeHealth storeHealth

	// haltErr is why this node stopped applying the log (version.go).
	haltErr atomic.Pointer[error]
}

// newRaftReplica is n's replica with an empty table of the given
// limits, before raft starts (startRaft); n's clock is set.
func newRaftReplica(n *Node, c fsm.Config) *raftReplica {
	return &raftReplica{
		Node:          n,
		table:         fsm.New(c),
		limits:        fsm.New(c).Config(),
		appliedCh:     make(chan struct{}),
		lastApplyMono: n.clock.Now(),
	}
}
