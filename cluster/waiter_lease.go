package cluster

import (
	"context"
	"encoding/binary"
	"sync"
	"time"

	"github.com/locknode/locknode/fsm"
)

// Waiter leases. A blocking acquire's waiter sits in the replicated table
// until it is granted, its wait ends or its node cancels it. If the node
// the request is blocked on dies (kill -9, a closed embedded Node, a
// machine gone), nobody cancels it: the lock would later be handed to it
// and held for its whole TTL by nobody. So a waiter is leased by the
// nodes that wait for it: every node tells the leader, every
// WaiterLease/4, the ids of the waiters its requests are blocked on
// (rpcWaiterClaim; the leader notes its own directly), and the leader
// cancels through the log (OpCancelWait, like a caller that gave up) a
// waiter no node claimed for WaiterLease. A new leader knows no claims
// yet and counts every waiter's lease from its first look.
//
// The lease lives in the leader's memory, not in the table: the FSM keeps
// no node identity, the cancellation is an ordinary command, and a client
// that retries its request (same request id) on another node is claimed
// by that node from then on. The price: a node cut off from the leader
// for longer than WaiterLease loses its waiters (its blocked requests
// fail with api.ErrCancelled), which is what a node that cannot reach the
// leader could not have used anyway.

// maxClaimIDs bounds one claim RPC; a node with more waiters sends more.
const maxClaimIDs = 1024

// waiterLeases is the leader's record of claims, reset with each term.
type waiterLeases struct {
	mu   sync.Mutex
	term *leadership
	last map[string]time.Time // waiter id -> last claim (or first look)
}

// claim records ids as claimed at now in term l.
func (w *waiterLeases) claim(l *leadership, ids []string, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.resetLocked(l)
	for _, id := range ids {
		w.last[id] = now
	}
}

func (w *waiterLeases) resetLocked(l *leadership) {
	if w.term != l || w.last == nil {
		w.term, w.last = l, make(map[string]time.Time)
	}
}

// due returns the waiters of queued whose lease ran out at now, and
// forgets claims of waiters no longer queued. A due waiter's lease
// restarts, so a cancel that failed is retried one lease later.
func (w *waiterLeases) due(l *leadership, queued []fsm.WaiterRef, now time.Time, lease time.Duration) []fsm.WaiterRef {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.resetLocked(l)
	keep := make(map[string]time.Time, len(queued))
	var out []fsm.WaiterRef
	for _, r := range queued {
		t, ok := w.last[r.ID]
		if !ok {
			t = now
		}
		if now.Sub(t) > lease {
			out = append(out, r)
			t = now
		}
		keep[r.ID] = t
	}
	// Claims that arrived before their acquire was applied are kept
	// until the next look.
	for id, t := range w.last {
		if _, ok := keep[id]; !ok && now.Sub(t) <= lease {
			keep[id] = t
		}
	}
	w.last = keep
	return out
}

// localWaiterIDs are the waiters this node's requests are blocked on.
func (n *leaderTerm) localWaiterIDs() []string {
	return n.hub.WaiterIDs()
}

// waiterLeaseLoop claims this node's waiters and, while it leads, cancels
// the waiters nobody claims. It ends when the node closes.
func (n *leaderTerm) waiterLeaseLoop() {
	lease := n.cfg.WaiterLease
	if lease <= 0 {
		return
	}
	t := time.NewTicker(lease / 4)
	defer t.Stop()
	for {
		select {
		case <-n.closed:
			return
		case <-t.C:
		}
		n.claimWaiters(lease / 4)
		n.cancelUnclaimedWaiters(lease)
	}
}

// claimWaiters tells the leader which waiters this node waits for.
func (n *leaderTerm) claimWaiters(timeout time.Duration) {
	ids := n.localWaiterIDs()
	if len(ids) == 0 {
		return
	}
	if l := n.lead.Load(); l != nil {
		n.leases.claim(l, ids, n.clock.Now())
		return
	}
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), maxClaimIDs)]
		ids = ids[len(chunk):]
		req := binary.AppendUvarint([]byte{rpcWaiterClaim}, uint64(len(chunk)))
		for _, id := range chunk {
			req = appendStr(req, id)
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		_, _, err := n.forward(ctx, req)
		cancel()
		if err != nil {
			n.log.Debug("claiming waiters at the leader failed", "waiters", len(chunk), "error", err)
			return
		}
	}
}

// handleWaiterClaim serves rpcWaiterClaim.
func (n *leaderTerm) handleWaiterClaim(body []byte) ([]byte, error) {
	d := fsm.NewDecoder(body)
	count := d.Uvarint()
	if d.Err() != nil || count > maxClaimIDs {
		return nil, errBadRPC
	}
	ids := make([]string, 0, count)
	for range count {
		ids = append(ids, d.Str())
	}
	if d.Err() != nil {
		return nil, errBadRPC
	}
	l := n.lead.Load()
	if l == nil {
		return []byte{stNotLeader}, nil
	}
	n.leases.claim(l, ids, n.clock.Now())
	return []byte{stOK}, nil
}

// maxCancelsPerRound bounds the cancels one look proposes; the rest
// follow at the next.
const maxCancelsPerRound = 256

// cancelUnclaimedWaiters, on the leader, cancels the queued waiters no
// node claimed for lease.
func (n *leaderTerm) cancelUnclaimedWaiters(lease time.Duration) {
	l := n.readyLead()
	if l == nil {
		return
	}
	n.mu.RLock()
	queued := n.table.WaiterRefs()
	n.mu.RUnlock()
	due := n.leases.due(l, queued, n.clock.Now(), lease)
	for i, r := range due {
		if i == maxCancelsPerRound {
			break
		}
		ctx, cancel := context.WithTimeout(l.ctx, n.cfg.CancelTimeout)
		res, err := n.Apply(ctx, &fsm.Command{Op: fsm.OpCancelWait, ReqID: r.ID, Owner: r.Owner})
		cancel()
		switch {
		case err != nil:
			n.log.Warn("cancelling an unclaimed waiter failed; retried later", "waiter", r.ID, "error", err)
		case res.Queued:
			n.log.Info("cancelled a waiter no node waits for", "waiter", r.ID, "owner", r.Owner, "lease", lease)
		}
	}
}
