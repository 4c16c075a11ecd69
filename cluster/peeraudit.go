package cluster

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/internal/tlsutil"
	"github.com/locknode/locknode/transport"
)

// Audit of what arrives over the peer port, and the forced releases a
// follower hands back with a forwarded command's result.
//
// A forced release or a membership change can reach a node over its peer
// port as well as over its client ports: forwarded by a member that took
// it from a client, or sent by whoever reaches a port left without TLS.
// The node that serves it audits it with the peer's identity (the
// certificate's Common Name, "" over plain TCP) and address, so an open
// port is not a way around the audit log.

// auditPeer writes one audit event for a request that came over the peer
// port (ctx is the RPC handler's).
func (n *Node) auditPeer(ctx context.Context, event string, kv ...any) {
	if n.cfg.Audit == nil {
		return
	}
	peer := ""
	if cert, _ := transport.PeerCertificate(ctx); cert != nil {
		peer = tlsutil.NodeID(cert)
	}
	n.cfg.Audit.Event(event, "", transport.PeerAddr(ctx), append([]any{"via", "peer", "peer", peer}, kv...)...)
}

// auditPeerForced audits the holds a command served for a peer ended by
// force (a forced release, a Redis DEL or overwrite of a lock, a script).
func (n *Node) auditPeerForced(ctx context.Context, r *fsm.Result) {
	if n.cfg.Audit == nil {
		return
	}
	for _, e := range r.Events {
		if isForced(e) {
			n.auditPeer(ctx, auth.EventForceRelease, "key", e.Key, "owner", e.Owner, "index", r.Index)
		}
	}
}

func isForced(e fsm.Event) bool {
	return e.Kind == fsm.EvReleased && e.Reason == fsm.ReasonForced
}

// errText is err's text, or "" for nil (an audit field).
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// forcedLogSize is how many entries with forced releases a node
// remembers: a forwarded command's result looks its entry up right after
// this node applied it, so only that many later forced releases in
// between can make it miss.
const forcedLogSize = 512

// forcedLog remembers the forced releases of the entries a node applied
// last. A leader's answer to a forwarded command carries no events
// (fsm.DecodeResult), yet the node that took the command from a client
// audits the holds it ended (a RESP DEL, SET or script over a lock): it
// applied the same entry, and the FSM decided the same there.
type forcedLog struct {
	last atomic.Uint64 // index of the latest entry recorded

	mu   sync.Mutex
	ring [forcedLogSize]forcedEntry
	next int // slot of the next record
}

type forcedEntry struct {
	index  uint64
	events []fsm.Event // EvReleased with ReasonForced only
}

// record keeps the forced releases among evs, the events of entry index.
// Entries are recorded in log order (the FSM goroutine).
func (f *forcedLog) record(index uint64, evs []fsm.Event) {
	var forced []fsm.Event
	for _, e := range evs {
		if isForced(e) {
			forced = append(forced, e)
		}
	}
	if len(forced) == 0 {
		return
	}
	f.mu.Lock()
	f.ring[f.next] = forcedEntry{index, forced}
	f.next = (f.next + 1) % forcedLogSize
	f.mu.Unlock()
	f.last.Store(index)
}

// lookup returns the forced releases of entry index once this node has
// applied it: none when it had none, or when it is no longer remembered.
func (f *forcedLog) lookup(index uint64) []fsm.Event {
	if index == 0 || index > f.last.Load() {
		return nil // the common case: no forced release since
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, j := 0, f.next; i < forcedLogSize; i++ {
		j = (j + forcedLogSize - 1) % forcedLogSize
		switch e := f.ring[j]; {
		case e.index == index:
			return e.events
		case e.index < index:
			return nil
		}
	}
	return nil
}
