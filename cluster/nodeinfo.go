package cluster

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/fsm"
)

// Node info: how a member learns the client-facing (HTTP, RESP)
// addresses of the others, for Sentinel discovery and INFO.
//
// Each node answers the rpcNodeInfo RPC with its id and its
// Config.Advertised addresses. PeerAddrs asks every member of the raft
// configuration in parallel and caches the answers per (id, raft
// address): a new member (or one whose raft address changed) is asked at
// once, a known one again after nodeInfoTTL (nodeInfoRetry after a
// failure) in the background while callers get the cached answer.
//
// Why an RPC and not replicated metadata: client addresses are not lock
// state (they would sit in every snapshot and need a log entry whenever
// a node restarts on new ports), and asking the member also tells
// whether it is up, which is what Sentinel discovery needs: a dead
// member's address is of no use to a client.

// The RPC is rpcNodeInfo (rpctable.go). Nodes that predate it answer
// with a transport error; they are listed without client addresses.

const (
	nodeInfoTTL     = 5 * time.Second // refresh a member that answered
	nodeInfoRetry   = time.Second     // ask again a member that did not
	nodeInfoTimeout = time.Second     // one rpcNodeInfo call
)

// ClientAddrs are the addresses a node serves clients on, as clients
// should dial them ("host:port"); empty when the node does not serve
// that protocol.
type ClientAddrs struct {
	HTTP string
	RESP string
}

// NodeAddrs describes one member of the raft configuration.
type NodeAddrs struct {
	ID   string // raft server id
	Raft string // raft address, from the configuration
	// HTTP and RESP are the member's advertised client addresses (its
	// Config.Advertised), as last reported; empty if it never answered.
	ClientAddrs
	Self bool // this node
	// Versions is the range of cluster versions the member runs, as last
	// reported; zero if it never answered.
	Versions VersionRange
	// Reachable: the member answered its last node-info query (at most
	// nodeInfoTTL ago, or nodeInfoRetry after a failure). Always true for
	// this node.
	Reachable bool
}

// nodeInfoCache holds the last answer of each member. The zero value is
// ready to use.
type nodeInfoCache struct {
	mu      sync.Mutex
	entries map[raft.ServerID]*nodeInfoEntry
}

type nodeInfoEntry struct {
	raftAddr string
	addrs    ClientAddrs
	versions VersionRange
	ok       bool      // the last query succeeded
	asked    bool      // a query has completed
	at       time.Time // when the last query completed
	inflight chan struct{}
}

// PeerAddrs returns every member of the raft configuration, in
// configuration order, with its client addresses (this node first if it
// is not a member). Members already known
// are answered from the cache (refreshed in the background when stale);
// members never asked before are asked now, and PeerAddrs waits for them
// until they answer (or time out, in about a second) or ctx ends, in
// which case they are listed unreachable. It never fails: without a
// readable configuration it lists this node alone.
func (n *roster) PeerAddrs(ctx context.Context) []NodeAddrs {
	self := NodeAddrs{
		ID: n.id, Raft: n.Addr(), ClientAddrs: n.cfg.Advertised, Self: true, Reachable: true, Versions: LocalVersions(),
	}
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return []NodeAddrs{self}
	}
	servers := f.Configuration().Servers
	closed := false
	select {
	case <-n.closed:
		closed = true
	default:
	}

	c := &n.peerInfo
	var wait []chan struct{}
	c.mu.Lock()
	if c.entries == nil {
		c.entries = make(map[raft.ServerID]*nodeInfoEntry)
	}
	live := make(map[raft.ServerID]bool, len(servers))
	now := time.Now()
	for _, s := range servers {
		live[s.ID] = true
		if string(s.ID) == n.id {
			continue
		}
		e := c.entries[s.ID]
		if e == nil || e.raftAddr != string(s.Address) {
			// New member, or it moved: what we knew is void.
			e = &nodeInfoEntry{raftAddr: string(s.Address)}
			c.entries[s.ID] = e
		}
		ttl := nodeInfoTTL
		if !e.ok {
			ttl = nodeInfoRetry
		}
		if e.inflight == nil && !closed && (!e.asked || now.Sub(e.at) >= ttl) {
			e.inflight = make(chan struct{})
			// Ends when the call answers or fails, within nodeInfoTimeout
			// (the transport also fails it at once when the node closes).
			go n.fetchNodeInfo(s.ID, e)
		}
		if !e.asked && e.inflight != nil {
			wait = append(wait, e.inflight)
		}
	}
	for id := range c.entries {
		if !live[id] {
			delete(c.entries, id)
		}
	}
	c.mu.Unlock()

	for _, ch := range wait {
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}

	out := make([]NodeAddrs, 0, len(servers)+1)
	if !live[raft.ServerID(n.id)] {
		// Not (yet, or no longer) a member; still the node answering.
		out = append(out, self)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range servers {
		if string(s.ID) == n.id {
			out = append(out, self)
			continue
		}
		a := NodeAddrs{ID: string(s.ID), Raft: string(s.Address)}
		if e := c.entries[s.ID]; e != nil && e.raftAddr == a.Raft {
			a.ClientAddrs, a.Reachable, a.Versions = e.addrs, e.ok, e.versions
		}
		out = append(out, a)
	}
	return out
}

// fetchNodeInfo asks member id at e.raftAddr for its addresses and
// stores the answer in e. A failed query keeps the addresses last
// reported (a client may still find the member there once it is back)
// but marks it unreachable.
func (n *roster) fetchNodeInfo(id raft.ServerID, e *nodeInfoEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), nodeInfoTimeout)
	defer cancel()
	info, err := n.askNodeInfo(ctx, string(id), e.raftAddr)
	if err != nil {
		n.log.Debug("node info", "peer", id, "error", err)
	}
	c := &n.peerInfo
	c.mu.Lock()
	defer c.mu.Unlock()
	e.asked, e.at, e.ok = true, time.Now(), err == nil
	if err == nil {
		e.addrs, e.versions = info.addrs, info.versions
	}
	close(e.inflight)
	e.inflight = nil
}

// nodeInfo is a member's rpcNodeInfo answer.
type nodeInfo struct {
	addrs    ClientAddrs
	versions VersionRange // legacyVersions when it does not say
	active   uint32       // its active cluster version; 0 when it does not say
}

// askNodeInfo runs one rpcNodeInfo call and checks the answer comes
// from the member expected at addr.
func (n *roster) askNodeInfo(ctx context.Context, id, addr string) (nodeInfo, error) {
	resp, err := n.tr.Call(ctx, addr, []byte{rpcNodeInfo})
	if err != nil {
		return nodeInfo{}, err
	}
	st, body, err := decodeStatus(resp)
	if err != nil {
		return nodeInfo{}, err
	}
	if st != stOK {
		return nodeInfo{}, fmt.Errorf("%w: node info status %d", errBadRPC, st)
	}
	d := fsm.NewDecoder(body)
	got, info := d.Str(), nodeInfo{versions: legacyVersions}
	info.addrs.HTTP, info.addrs.RESP = d.Str(), d.Str()
	if d.Err() == nil && d.Len() > 0 {
		lo, hi, active := d.Uvarint(), d.Uvarint(), d.Uvarint()
		if d.Err() == nil && (lo == 0 || lo > hi || hi > 1<<32-1 || active > 1<<32-1) {
			return nodeInfo{}, fmt.Errorf("%w: node info: cluster versions %d..%d", errBadRPC, lo, hi)
		}
		info.versions, info.active = VersionRange{uint32(lo), uint32(hi)}, uint32(active)
	}
	if d.Err() != nil {
		return nodeInfo{}, fmt.Errorf("%w: node info: %w", errBadRPC, d.Err())
	}
	if got != id {
		// Another node now listens where the configuration says id is.
		return nodeInfo{}, fmt.Errorf("cluster: node info: %s answered for %s", got, id)
	}
	return info, nil
}

// handleNodeInfo answers rpcNodeInfo.
func (n *roster) handleNodeInfo() []byte {
	b := appendStr([]byte{stOK}, n.id)
	b = appendStr(b, n.cfg.Advertised.HTTP)
	b = appendStr(b, n.cfg.Advertised.RESP)
	v := LocalVersions()
	b = binary.AppendUvarint(b, uint64(v.Min))
	b = binary.AppendUvarint(b, uint64(v.Max))
	return binary.AppendUvarint(b, uint64(n.ClusterVersion()))
}
