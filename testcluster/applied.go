package testcluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/fsm"
)

// Applied is one entry as a replica applied it: its events and, when the
// recorder read the table then, the locks of the watched keys.
type Applied struct {
	Index  uint64
	Events []fsm.Event
	// Locks, when set, is the state of the watched keys once the replica
	// had applied At (the last entry of the batch the entry came in,
	// since the recorder reads the table after the batch): each key's
	// waiters in queue order and its holders. Keys without holders or
	// waiters are absent. Entries read at the same index and time may
	// share one map: read it, never change it.
	Locks map[string]fsm.LockInfo
	At    uint64
}

// AppliedLog records what one replica applied, in log order, through
// cluster.Node.Subscribe: the events every entry caused and, after each
// batch, the queues and holders of the watched keys. It is the evidence
// of CheckGrantOrder and CheckPermits, taken from the log rather than
// from client timing.
type AppliedLog struct {
	keys   []string
	mu     sync.Mutex
	stream []Applied
}

// RecordApplied subscribes to n and records its applied entries until
// cancel. keys are the keys whose queues and holders are read after each
// batch (the keys of every event are read too; a waiter queued in an
// entry without events is seen at the next read).
//
// The entries of one batch share a read: each is called for after the
// whole batch is applied, so they would read the same table at the same
// index and time. A read at the index and time of the one before reuses
// what that one found (Applied.Locks may be the same map for several
// entries; it is never changed once recorded) and inspects only keys it
// had not read.
func RecordApplied(n *cluster.Node, keys ...string) (log *AppliedLog, cancel func()) {
	log = &AppliedLog{keys: keys}
	var reads readCache
	// Every event, a renewal's lease change included, is recorded.
	removeDemand := n.AddChangeDemand(func() bool { return true })
	unsub := n.Subscribe(func(index uint64, events []fsm.Event) {
		a := Applied{Index: index, Events: slices.Clone(events)}
		want := slices.Clone(keys)
		for _, e := range events {
			if e.Key != "" {
				want = append(want, e.Key)
			}
			want = append(want, e.Keys...)
			if e.Kind == fsm.EvRestored {
				reads.forget()
			}
		}
		slices.Sort(want)
		want = slices.Compact(want)
		// Subscribe's calls run on the apply path after the batch is
		// applied and before the next one is: the read sees the state at
		// the batch's last index, which AppliedIndex names.
		_ = n.Read(context.Background(), true, func(t *fsm.Table, now int64) {
			a.At = t.AppliedIndex()
			a.Locks = reads.read(a.At, now, want, func(k string) (fsm.LockInfo, bool) {
				info, err := t.Inspect(k, now)
				return info, err == nil && (len(info.Holders) > 0 || len(info.Waiters) > 0)
			})
		})
		log.mu.Lock()
		log.stream = append(log.stream, a)
		log.mu.Unlock()
	})
	return log, func() { unsub(); removeDemand() }
}

// readCache is RecordApplied's last read of the table, which the next
// read at the same index and time reuses.
type readCache struct {
	mu        sync.Mutex // calls come one at a time from the apply path; held all the same
	at        uint64
	now       int64
	locks     map[string]fsm.LockInfo // the last read's answer; nil: none to reuse
	inspected map[string]bool         // every key inspected for it, found or not
}

// read returns the locks of want at index at and time now, inspecting
// only the keys the last read did not, if it was at the same index and
// time. The map returned is never changed afterwards: one that needs
// more keys is a copy.
func (c *readCache) read(at uint64, now int64, want []string, inspect func(key string) (fsm.LockInfo, bool)) map[string]fsm.LockInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.locks == nil || at != c.at || now != c.now {
		c.at, c.now, c.locks, c.inspected = at, now, nil, map[string]bool{}
	}
	locks, own := c.locks, false
	for _, k := range want {
		if c.inspected[k] {
			continue
		}
		c.inspected[k] = true
		info, ok := inspect(k)
		if !ok {
			continue
		}
		if !own {
			// Copied, not added to: the last map may be an earlier entry's.
			locks, own = maps.Clone(c.locks), true
			if locks == nil {
				locks = make(map[string]fsm.LockInfo)
			}
		}
		locks[k] = info
	}
	if locks == nil {
		locks = make(map[string]fsm.LockInfo)
	}
	c.locks = locks
	return locks
}

// forget drops the last read: after a snapshot restore the table is
// another, even at an index and time read before.
func (c *readCache) forget() {
	c.mu.Lock()
	c.locks = nil
	c.mu.Unlock()
}

// Entries returns what was recorded so far.
func (l *AppliedLog) Entries() []Applied {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.stream)
}

// CheckGrantOrder checks that every key's waiters were granted in the
// order they were queued (docs/DESIGN.md "Waiters are served in log
// order"): when a waiter is granted a key, no waiter queued ahead of it
// on that key is still waiting. Several grants in one entry (shared
// holds, semaphore permits, a release that frees several keys) come in
// queue order; a waiter that gave up (EvWaitEnded) leaves the queue. The
// queue order is what the recorder read from the table; a waiter queued
// and granted between two reads is not seen, so the check may miss, but
// never invents, a violation. A snapshot restore (EvRestored) starts
// over.
func CheckGrantOrder(entries []Applied) error {
	queues := map[string][]string{} // key -> waiter ids believed still queued, in order
	var pending []Applied           // entries whose reads are due once At is reached
	apply := func(a Applied) {
		for k := range queues {
			delete(queues, k)
		}
		for k, info := range a.Locks {
			for _, w := range info.Waiters {
				queues[k] = append(queues[k], w.ID)
			}
		}
	}
	for _, a := range entries {
		for len(pending) > 0 && pending[0].At < a.Index {
			apply(pending[0])
			pending = pending[1:]
		}
		for _, e := range a.Events {
			switch e.Kind {
			case fsm.EvRestored:
				clear(queues)
				pending = pending[:0]
			case fsm.EvGranted:
				for _, k := range e.Keys {
					q := queues[k]
					if i := slices.Index(q, e.WaiterID); i > 0 {
						return fmt.Errorf("index %d: waiter %q (owner %q) granted %q while %q, queued ahead of it, still waits (queue %q)",
							a.Index, e.WaiterID, e.Owner, k, q[0], q)
					}
				}
				fallthrough
			case fsm.EvWaitEnded:
				for _, k := range e.Keys {
					queues[k] = slices.DeleteFunc(queues[k], func(id string) bool { return id == e.WaiterID })
				}
			}
		}
		if a.Locks != nil {
			if a.At <= a.Index {
				apply(a)
			} else {
				pending = append(pending, a)
			}
		}
	}
	return nil
}

// CheckGrantsOutliveEntry checks that no waiter's grant ends in the
// entry that granted it (the FSM's rule, its fuzz's too: such a hold
// could never be used, and the next waiter would be granted with the
// same fence).
func CheckGrantsOutliveEntry(entries []Applied) error {
	type hold struct {
		key, owner string
		fence      uint64
	}
	for _, a := range entries {
		var granted []hold
		for _, e := range a.Events {
			switch e.Kind {
			case fsm.EvGranted:
				for _, k := range e.Keys {
					granted = append(granted, hold{k, e.Owner, e.Fence})
				}
			case fsm.EvReleased:
				if slices.Contains(granted, hold{e.Key, e.Owner, e.Fence}) {
					return fmt.Errorf("index %d: the hold of %q on %q (fence %d) was granted and ended in this entry (reason %d)",
						a.Index, e.Owner, e.Key, e.Fence, e.Reason)
				}
			}
		}
	}
	return nil
}

// CheckPermits checks that no semaphore ever had more holders than its
// permits at any index the recorder read the table, and no exclusive
// lock more than one holder.
func CheckPermits(entries []Applied) error {
	for _, a := range entries {
		for k, info := range a.Locks {
			n := len(info.Holders)
			if info.Permits > 0 && n > info.Permits {
				return fmt.Errorf("index %d: semaphore %q has %d holders, over its %d permits: %q", a.At, k, n, info.Permits, holders(info))
			}
			if info.Permits == 0 && n > 1 && slices.ContainsFunc(info.Holders, func(h fsm.Hold) bool { return h.Mode == fsm.Exclusive }) {
				return fmt.Errorf("index %d: lock %q has %d holders, one exclusive: %q", a.At, k, n, holders(info))
			}
		}
	}
	return nil
}

func holders(info fsm.LockInfo) []string {
	out := make([]string, len(info.Holders))
	for i, h := range info.Holders {
		out[i] = h.Owner
	}
	return out
}

// AppliedRecorder records what every node of a Cluster applies
// (RecordApplied on each), following restarts: each start of a node is a
// stream of its own, checked on its own.
type AppliedRecorder struct {
	keys    []string
	mu      sync.Mutex
	streams []appliedStream
}

type appliedStream struct {
	node   int
	log    *AppliedLog
	cancel func()
}

// RecordApplied records the applied entries of every node, now and after
// each restart, reading keys' queues and holders after each batch (see
// RecordApplied). Stop ends it.
func (c *Cluster) RecordApplied(keys ...string) *AppliedRecorder {
	r := &AppliedRecorder{keys: keys}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recorders = append(c.recorders, r)
	for i, n := range c.nodes {
		if n != nil {
			r.add(i, n)
		}
	}
	return r
}

// add records node i's new incarnation n; the caller holds the Cluster's
// lock, so a node starting meanwhile is added once.
func (r *AppliedRecorder) add(i int, n *cluster.Node) {
	log, cancel := RecordApplied(n, r.keys...)
	r.mu.Lock()
	r.streams = append(r.streams, appliedStream{node: i, log: log, cancel: cancel})
	r.mu.Unlock()
}

// Stop ends the recording; what was recorded stays checkable.
func (r *AppliedRecorder) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.streams {
		s.cancel()
	}
}

// Check runs CheckGrantOrder, CheckGrantsOutliveEntry and CheckPermits on every stream recorded
// and returns what they found, each naming its node.
func (r *AppliedRecorder) Check() []error {
	r.mu.Lock()
	streams := slices.Clone(r.streams)
	r.mu.Unlock()
	var errs []error
	for _, s := range streams {
		entries := s.log.Entries()
		if err := CheckGrantOrder(entries); err != nil {
			errs = append(errs, fmt.Errorf("grant order (node %d): %w", s.node, err))
		}
		if err := CheckGrantsOutliveEntry(entries); err != nil {
			errs = append(errs, fmt.Errorf("grants (node %d): %w", s.node, err))
		}
		if err := CheckPermits(entries); err != nil {
			errs = append(errs, fmt.Errorf("permits (node %d): %w", s.node, err))
		}
	}
	return errs
}
