package fsm

import (
	"container/heap"
	"sort"
	"strings"
)

// Read-only queries for the cluster and HTTP layers. They never change the
// table. now is the reader's time; the table's own clock is used when it
// is later. Holds, waiters, sessions and values whose deadline is <= now
// are treated as gone even if no Tick removed them yet. Everything
// returned is a copy.

// LockInfo describes the value at one key.
type LockInfo struct {
	Key        string
	Kind       Kind // KindLock, a Redis kind, or KindNone (only waiters)
	Permits    int  // semaphore size; 0 otherwise
	Fence      uint64
	Holders    []Hold   // grant order; Deadline is the effective one (session-bound: the session's)
	Waiters    []Waiter // queue order
	DelayUntil int64    // lock-delay end; 0 none
	Deadline   int64    // latest hold deadline, or the value's deadline; 0 none
}

// Stats counts what the table holds.
type Stats struct {
	Keys     int // values of every kind
	Locks    int // lock values
	Holds    int
	Waiters  int
	Sessions int
	ReqIDs   int // remembered request ids
	Fences   int // resources in the fence registry
	// Memory is the key space's accounted size in bytes (MemoryUsed), the
	// figure Config.MaxMemory bounds.
	Memory int64
}

func (t *keySpace) readNow(now int64) int64 {
	if t.now > now {
		return t.now
	}
	return now
}

// liveHold returns a copy of h as seen at now, or false if it ended.
func (t *lockTable) liveHold(h *hold, now int64) (Hold, bool) {
	if sid := h.session(); sid != "" {
		if s := t.sessions[sid]; s == nil || s.Deadline <= now {
			return Hold{}, false
		}
	}
	d := t.holdDeadline(h)
	if d != 0 && d <= now {
		return Hold{}, false
	}
	c := h.view()
	c.Deadline = d
	return c, true
}

func copyWaiter(w *Waiter) Waiter {
	c := *w
	c.Keys = append([]string(nil), w.Keys...)
	return c
}

// info builds key's LockInfo at now; ok is false when nothing is there.
func (t *lockTable) info(key string, now int64, withWaiters bool) (LockInfo, bool) {
	li := LockInfo{Key: key}
	v := t.getAt(key, now)
	if v != nil {
		li.Kind = v.Kind()
		li.Deadline = v.deadline()
	}
	if v != nil && v.Kind() == KindLock {
		l := v.lock()
		li.Permits, li.Fence = l.Permits(), l.Fence()
		for i := 0; i < l.numHolders(); i++ {
			if c, ok := t.liveHold(l.holder(i), now); ok {
				li.Holders = append(li.Holders, c)
				if c.Deadline > li.Deadline {
					li.Deadline = c.Deadline
				}
			}
		}
		if d := l.DelayUntil(); d > now {
			li.DelayUntil = d
		}
		if len(li.Holders) == 0 && li.DelayUntil == 0 {
			li.Kind, li.Permits, li.Fence = KindNone, 0, 0
		}
	}
	if withWaiters || li.Kind == KindNone {
		for _, w := range t.queues[key] {
			if w.Deadline > now {
				if !withWaiters {
					li.Waiters = append(li.Waiters, Waiter{}) // presence only
					break
				}
				li.Waiters = append(li.Waiters, copyWaiter(w))
			}
		}
	}
	if li.Kind == KindNone && len(li.Waiters) == 0 {
		return LockInfo{}, false
	}
	return li, true
}

// HeldByOther reports whether key is a lock with a live holder other
// than owner at now. It is Inspect's answer to that one question without
// copying holders and waiters (the leader asks it for every blocking
// acquire of a busy lock).
func (t *lockTable) HeldByOther(key, owner string, now int64) bool {
	now = t.readNow(now)
	v := t.getAt(key, now)
	if v == nil || v.Kind() != KindLock {
		return false
	}
	l := v.lock()
	other := false
	for i := 0; i < l.numHolders(); i++ {
		if c, ok := t.liveHold(l.holder(i), now); ok {
			if c.Owner == owner {
				return false // reentrant or a repeat: answered at once
			}
			other = true
		}
	}
	return other
}

// Inspect describes key: a lock with its holders and waiters, a Redis
// value (Kind set, no holders), or only waiters (Kind KindNone).
// ErrNoSuchKey if there is nothing.
func (t *lockTable) Inspect(key string, now int64) (LockInfo, error) {
	li, ok := t.info(key, t.readNow(now), true)
	if !ok {
		return LockInfo{}, errf(ErrNoSuchKey, "%q", key)
	}
	return li, nil
}

// List returns up to limit locks (100 if limit <= 0) whose key starts with
// prefix and sorts after after, in key order; next is the last key
// returned when more follow, else "".
func (t *lockTable) List(prefix, after string, limit int, now int64) (infos []LockInfo, next string) {
	now = t.readNow(now)
	if limit <= 0 {
		limit = 100
	}
	// The limit+1 smallest matching keys, in a max-heap.
	var h keyHeap
	for k, v := range t.keys {
		if v.Kind() != KindLock || k <= after || !strings.HasPrefix(k, prefix) {
			continue
		}
		if len(h) > limit && k >= h[0] {
			continue
		}
		if li, ok := t.info(k, now, false); !ok || li.Kind != KindLock {
			continue
		}
		heap.Push(&h, k)
		if len(h) > limit+1 {
			heap.Pop(&h)
		}
	}
	keys := make([]string, len(h))
	for i := len(keys) - 1; i >= 0; i-- {
		keys[i] = heap.Pop(&h).(string)
	}
	if len(keys) > limit {
		keys = keys[:limit]
		next = keys[limit-1]
	}
	for _, k := range keys {
		li, _ := t.info(k, now, true)
		infos = append(infos, li)
	}
	return infos, next
}

// keyHeap is a max-heap of keys.
type keyHeap []string

func (h keyHeap) Len() int           { return len(h) }
func (h keyHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h keyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *keyHeap) Push(x any)        { *h = append(*h, x.(string)) }
func (h *keyHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Stats counts the table's contents as of the last applied entry.
func (t *lockTable) Stats() Stats {
	return Stats{Keys: len(t.keys), Locks: t.nLocks, Holds: t.nHolds, Waiters: len(t.waiters),
		Sessions: len(t.sessions), ReqIDs: t.reqs.len(), Fences: len(t.fences), Memory: t.MemoryUsed()}
}

// Session returns session id if it is alive at now.
func (t *lockTable) Session(id string, now int64) (Session, bool) {
	s := t.sessions[id]
	if s == nil || s.Deadline <= t.readNow(now) {
		return Session{}, false
	}
	return *s, true
}

// Waiter returns waiter id if it is still queued.
func (t *lockTable) Waiter(id string) (Waiter, bool) {
	w := t.waiters[id]
	if w == nil {
		return Waiter{}, false
	}
	return copyWaiter(w), true
}

// HoldOf returns owner's hold on key if it is alive at now (Deadline is
// the effective one).
func (t *lockTable) HoldOf(key, owner string, now int64) (Hold, bool) {
	now = t.readNow(now)
	v := t.getAt(key, now)
	if v == nil || v.Kind() != KindLock {
		return Hold{}, false
	}
	if h := v.lock().holdOf(owner); h != nil {
		return t.liveHold(h, now)
	}
	return Hold{}, false
}

// WaiterRef names one queued waiter.
type WaiterRef struct {
	ID, Owner string
	Enqueued  uint64
}

// WaiterRefs lists every queued waiter, in queueing order.
func (t *lockTable) WaiterRefs() []WaiterRef {
	out := make([]WaiterRef, 0, len(t.waiters))
	for _, w := range t.waiters {
		out = append(out, WaiterRef{ID: w.ID, Owner: w.Owner, Enqueued: w.Enqueued})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Enqueued != out[j].Enqueued {
			return out[i].Enqueued < out[j].Enqueued
		}
		return out[i].ID < out[j].ID
	})
	return out
}
