package cluster

import (
	"context"
	"strings"

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
		servers := f.Configuration().Servers
		for _, s := range servers {
			st.Members = append(st.Members, api.Member{
				ID: string(s.ID), Address: string(s.Address),
				Suffrage: strings.ToLower(s.Suffrage.String()), Leader: s.ID == leaderID,
			})
		}
		n.addContacts(st.Members, servers)
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
func (n *raftReplica) maxMemory() int64 {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return max(n.table.Config().MaxMemory, 0)
}

func (n *raftReplica) stats() fsm.Stats {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.table.Stats()
}
