package api

import (
	"fmt"
	"strings"
	"time"
)

// NoLeaderError refuses a request that needs a leader on a node that has
// known none for longer than an election takes (cluster.Config.NoLeaderBound): the
// cluster has no quorum, or this node is cut off from it. It comes
// wrapped with ErrNoLeader.
type NoLeaderError struct {
	ID     string        // this node
	State  string        // its raft state (Candidate, Follower)
	For    time.Duration // how long it has known no leader
	Voters int           // voters in its configuration
}

func (e *NoLeaderError) Error() string {
	return fmt.Sprintf("node %s (%s) has had no leader for %v: the cluster has no quorum or this node is cut off from it; a leader needs %d of the %d voters running and reaching each other",
		e.ID, strings.ToLower(e.State), e.For.Round(100*time.Millisecond), e.Voters/2+1, e.Voters)
}
