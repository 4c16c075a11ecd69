package cluster

import (
	"fmt"
	"time"

	"github.com/locknode/locknode/api"
)

// NoLeaderError is api.NoLeaderError, which this package returns wrapped
// with api.ErrNoLeader; the type lives in api so that the front ends
// branch on it without importing cluster.
type NoLeaderError = api.NoLeaderError

// NoLeaderBound is how long a node may know no leader before requests
// that need one are refused at once rather than retried: a follower's
// leader timeout plus three election rounds, each at its longest (raft
// draws each timeout between T and 2T), and never under
// minNoLeaderBound, which leaves a busy machine's election time to
// finish. A cluster with a quorum elects within it.
func (c Config) NoLeaderBound() time.Duration {
	return max(2*c.HeartbeatTimeout+3*2*c.ElectionTimeout, minNoLeaderBound)
}

// minNoLeaderBound: short timeouts (tests, fast networks) do not make
// elections on a loaded machine that fast.
const minNoLeaderBound = 2 * time.Second

// noteLeader records whether a leader is known (leader observations).
func (n *leaderTerm) noteLeader(known bool) {
	if known {
		n.noLeaderSince.Store(0)
		return
	}
	n.noLeaderSince.CompareAndSwap(0, time.Now().UnixNano())
}

// leaderless returns a *NoLeaderError (wrapped with api.ErrNoLeader)
// when this node has known no leader for longer than NoLeaderBound, else
// nil. It asks raft itself, so a missed observation only delays it.
func (n *leaderTerm) leaderless() error {
	if _, id := n.raft.LeaderWithID(); id != "" {
		n.noLeaderSince.Store(0)
		return nil
	}
	since := n.noLeaderSince.Load()
	if since == 0 {
		n.noteLeader(false)
		return nil
	}
	d := time.Since(time.Unix(0, since))
	if d < n.cfg.NoLeaderBound() {
		return nil
	}
	return fmt.Errorf("%w: %w", api.ErrNoLeader, &NoLeaderError{ID: n.id, State: n.raft.State().String(), For: d, Voters: n.voters()})
}
