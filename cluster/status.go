package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// Status describes this node as it sees the cluster: no round trip, so
// it answers even without a leader.
func (n *Node) Status(ctx context.Context) (api.Status, error) {
	if err := ctx.Err(); err != nil {
		return api.Status{}, err
	}
	leaderAddr, leaderID := n.raft.LeaderWithID()
	st := api.Status{
		ID:           n.id,
		Leader:       string(leaderID),
		LeaderAddr:   string(leaderAddr),
		State:        strings.ToLower(n.raft.State().String()),
		Term:         n.raft.CurrentTerm(),
		AppliedIndex: n.AppliedIndex(),
		CommitIndex:  n.raft.CommitIndex(),
		Members:      []api.Member{},
	}
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			st.Members = append(st.Members, api.Member{
				ID: string(s.ID), Address: string(s.Address),
				Suffrage: strings.ToLower(s.Suffrage.String()), Leader: s.ID == leaderID,
			})
		}
	}
	n.mu.RLock()
	stats := n.table.Stats()
	st.FSMTimeMs = n.table.Now()
	st.ClusterVersion = n.table.Version()
	n.mu.RUnlock()
	st.ClusterVersions = LocalVersions().String()
	if err := n.Halted(); err != nil {
		st.Halted = err.Error()
	}
	st.Locks, st.Keys, st.Waiters, st.Sessions = stats.Locks, stats.Keys, stats.Waiters, stats.Sessions
	st.KeyspaceBytes, st.KeyspaceMaxBytes = stats.Memory, n.maxMemory()
	return st, nil
}

// maxMemory is the key space's memory limit in bytes; 0 = none.
func (n *Node) maxMemory() int64 {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return max(n.table.Config().MaxMemory, 0)
}

func (n *Node) stats() fsm.Stats {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.table.Stats()
}

// ErrNotReady: the node cannot answer linearizably now (Ready).
var ErrNotReady = errors.New("cluster: not ready")

// readyApplyWait bounds how long Ready waits for this node to apply what
// it knows is committed: a busy node is a few entries behind at any
// instant, a stuck one stays behind.
const readyApplyWait = time.Second

// Ready reports whether this node can serve requests now: a leader is
// known, a follower has heard from it within a few heartbeat timeouts,
// and the node applies what is committed (it reaches the commit index it
// knows within readyApplyWait). It is what a load balancer's readiness
// probe asks (GET /readyz); the error says which condition failed.
func (n *Node) Ready(ctx context.Context) error {
	if err := n.Halted(); err != nil {
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	_, leader := n.raft.LeaderWithID()
	if leader == "" {
		return fmt.Errorf("%w: no leader known", ErrNotReady)
	}
	if n.raft.State() != raft.Leader {
		limit := 3 * n.cfg.HeartbeatTimeout
		if lc := n.raft.LastContact(); lc.IsZero() || time.Since(lc) > limit {
			return fmt.Errorf("%w: no contact with leader %s for over %v", ErrNotReady, leader, limit)
		}
	}
	commit := n.lastCommandAtOrBefore(n.raft.CommitIndex())
	wctx, cancel := context.WithTimeout(ctx, readyApplyWait)
	defer cancel()
	if err := n.waitApplied(wctx, commit); err != nil {
		return fmt.Errorf("%w: applied %d of %d committed: %w", ErrNotReady, n.AppliedIndex(), commit, err)
	}
	return nil
}
