package fsm

import "container/heap"

// Key-space primitives shared by the lock table (lock*.go) and the Redis
// commands (redis*.go). Every mutation goes through put, setDeadline and
// del so that deadlines are scheduled, versions bumped and waiters handed
// the key when it frees.

// get returns the live value at key, or nil. Inside Apply every due value
// was already removed by expireDue, so this is a plain lookup.
func (t *Table) get(key string) *Value { return t.keys[key] }

// getAt returns the value at key as seen at time now without changing
// anything (read-only queries between entries). A value whose Deadline has
// passed is gone. For a lock, callers must still skip holds whose Deadline
// <= now (see liveHolds).
func (t *Table) getAt(key string, now int64) *Value {
	v := t.keys[key]
	if v == nil || (v.Deadline != 0 && v.Deadline <= now) {
		return nil
	}
	return v
}

// put stores v at key, replacing whatever was there without events (the
// caller deletes a lock first with del when it replaces one), bumps the
// version and schedules v.Deadline.
func (t *Table) put(ctx *applyCtx, key string, v *Value) {
	v.Version = ctx.index
	t.keys[key] = v
	if v.Deadline != 0 && v.Kind != KindLock {
		t.schedule(v.Deadline, dueKey, key)
	}
	if v.Kind == KindLock {
		ctx.emit(Event{Kind: EvChanged, Key: key})
	}
}

// touch marks v (stored at key) as changed by this entry.
func (t *Table) touch(ctx *applyCtx, key string, v *Value) {
	v.Version = ctx.index
	if v.Kind == KindLock {
		ctx.emit(Event{Kind: EvChanged, Key: key})
	}
}

// setDeadline sets a non-lock value's deadline (0 = persist).
func (t *Table) setDeadline(ctx *applyCtx, key string, v *Value, at int64) {
	v.Deadline = at
	t.touch(ctx, key, v)
	if at != 0 {
		t.schedule(at, dueKey, key)
	}
}

// del removes the value at key. A lock's holds end with reason (EvReleased
// each); then the key's waiters are offered it. It reports whether a value
// was there.
func (t *Table) del(ctx *applyCtx, key string, reason Reason) bool {
	v := t.keys[key]
	if v == nil {
		return false
	}
	delete(t.keys, key)
	if v.Kind == KindLock {
		for _, h := range v.Lock.Holders {
			t.holdEnded(ctx, key, h, reason)
		}
		ctx.emit(Event{Kind: EvChanged, Key: key})
	}
	t.keyFreed(ctx, key)
	return true
}

// Due work: one min-heap of (time, kind, id), ordered totally so the pop
// order does not depend on the heap's layout. Entries are hints: each
// handler re-checks the state, so a stale entry (a lease that was
// extended, a waiter already granted) is dropped. The heap is derived
// state, rebuilt on Restore and never part of a snapshot.

type dueKind uint8

const (
	dueKey       dueKind = iota + 1 // a non-lock value's Deadline
	dueHold                         // some hold on the lock at id may have ended
	dueDelay                        // the lock-delay of the lock at id may have ended
	dueWaiter                       // waiter id's wait may have ended
	dueSession                      // session id may have expired
	dueReqID                        // remembered request ids may be forgotten
	dueTombstone                    // the release tombstone at id may have ended
)

type dueItem struct {
	at   int64
	kind dueKind
	id   string
}

type dueHeap []dueItem

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.id < b.id
}
func (h dueHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)   { *h = append(*h, x.(dueItem)) }

// Pop drops the last item; callers read the minimum before heap.Pop, so no
// item is boxed into an interface (an allocation per due item).
func (h *dueHeap) Pop() any {
	*h = (*h)[:len(*h)-1]
	return nil
}

// schedule asks for a due check of (kind, id) at FSM time at.
func (t *Table) schedule(at int64, kind dueKind, id string) {
	// append + Fix instead of heap.Push: no boxing into an interface.
	t.due = append(t.due, dueItem{at: at, kind: kind, id: id})
	heap.Fix(&t.due, len(t.due)-1)
}

// NextDeadline returns the earliest FSM time at which something may fall
// due (a lease, a wait, a session, a value's TTL, a lock-delay). The
// leader proposes a Tick when it passes. ok is false when nothing is
// scheduled. It may be a stale hint; a Tick for it is harmless.
func (t *Table) NextDeadline() (at int64, ok bool) {
	if len(t.due) == 0 {
		return 0, false
	}
	return t.due[0].at, true
}

// expireDue runs every due item with time <= ctx.now, in (time, kind, id)
// order, at the start of each Apply, so every command sees only live state.
func (t *Table) expireDue(ctx *applyCtx) {
	for len(t.due) > 0 && t.due[0].at <= ctx.now {
		it := t.due[0]
		heap.Pop(&t.due)
		ctx.at = it.at
		switch it.kind {
		case dueKey:
			if v := t.keys[it.id]; v != nil && v.Kind != KindLock && v.Deadline != 0 && v.Deadline <= it.at {
				t.del(ctx, it.id, ReasonExpired)
			}
		case dueHold:
			t.expireHolds(ctx, it.id)
		case dueDelay:
			t.delayEnded(ctx, it.id)
		case dueWaiter:
			t.expireWaiter(ctx, it.id)
		case dueSession:
			t.expireSession(ctx, it.id)
		case dueReqID:
			t.expireReqIDs(ctx)
		case dueTombstone:
			t.expireTombstone(ctx, it.id)
		}
		t.flushFreed(ctx)
	}
	ctx.at = ctx.now
}
