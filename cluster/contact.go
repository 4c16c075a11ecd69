package cluster

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/api"
)

// Each member's last contact, as the leader sees it: when the member
// last answered the leader's replication (an AppendEntries, heartbeats
// included, or a snapshot). raft keeps the same per follower but does
// not expose it; raftNet notes it on the way, so it works on upstream
// raft too.

// unreachableAfter is how long a member may leave the leader unanswered
// before status marks it unreachable: the bound Ready gives a follower
// without word from its leader.
func (n *roster) unreachableAfter() time.Duration { return 3 * n.cfg.HeartbeatTimeout }

// contactBook holds the last answer of each peer, by id and address (a
// member re-added at another address starts afresh). The zero value is
// ready to use.
type contactBook struct {
	mu sync.Mutex
	at map[contactKey]time.Time
}

type contactKey struct {
	id   raft.ServerID
	addr raft.ServerAddress
}

func (b *contactBook) note(id raft.ServerID, addr raft.ServerAddress) {
	now := time.Now()
	b.mu.Lock()
	if b.at == nil {
		b.at = make(map[contactKey]time.Time)
	}
	b.at[contactKey{id, addr}] = now
	b.mu.Unlock()
}

// last returns the last answer of each of servers, by id, and forgets
// the peers not among them (members removed since).
func (b *contactBook) last(servers []raft.Server) map[raft.ServerID]time.Time {
	out := make(map[raft.ServerID]time.Time, len(servers))
	keep := make(map[contactKey]bool, len(servers))
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range servers {
		k := contactKey{s.ID, s.Address}
		keep[k] = true
		if t, ok := b.at[k]; ok {
			out[s.ID] = t
		}
	}
	for k := range b.at {
		if !keep[k] {
			delete(b.at, k)
		}
	}
	return out
}

// addContacts fills in the members' last contact and marks the
// unreachable ones, when this node leads (no one else knows); the
// members are in the order of servers.
func (n *roster) addContacts(members []api.Member, servers []raft.Server) {
	l := n.lead.Load()
	if l == nil || n.rtrans == nil {
		return
	}
	now := time.Now()
	limit := n.unreachableAfter()
	last := n.rtrans.contacts.last(servers)
	for i := range members {
		if members[i].ID == n.id {
			continue
		}
		t, ok := last[raft.ServerID(members[i].ID)]
		if ok && !t.Before(l.began) {
			ms := now.Sub(t).Milliseconds()
			members[i].LastContactMs = &ms
			members[i].Unreachable = now.Sub(t) > limit
			continue
		}
		// No answer in this term (an earlier term's is no news of now).
		members[i].Unreachable = now.Sub(l.began) > limit
		if ok {
			ms := now.Sub(t).Milliseconds()
			members[i].LastContactMs = &ms
		}
	}
}
