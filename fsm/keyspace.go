package fsm

// The key-space core: the values at the keys with their deadlines, the
// due queue, the accounted memory and the remembered request ids. The
// lock ops (lock*.go, session.go) and the Redis commands (redis*.go) are
// built on it. Every mutation goes through put, setDeadline and del so
// that deadlines are scheduled, versions bumped and waiters handed the
// key when it frees.

// keySpace is the key-space core of a Table. It is shared, by pointer, by
// the parts built on it.
type keySpace struct {
	cfg     Config
	now     int64  // FSM clock, ms; never decreases
	applied uint64 // index of the last applied entry

	keys map[string]*Value
	due  dueQueue // derived: what falls due when

	// nLocks and nHolds count the lock values in keys and their holds,
	// kept as they change (countLock) so Stats is O(1). Derived.
	nLocks, nHolds int
	// mem is the accounted size of everything but the request ids (which
	// reqs counts itself), kept as the table changes (memory.go): the
	// parts built on the core add what they keep beside the values.
	// Derived: recounted on Restore.
	mem int64

	// reqs are the remembered results by request id, in the order they
	// were remembered (= expiry order): exactly-once (dedupe.go).
	reqs reqTable

	// keyspaceEvents: Apply emits EvKeyspace (SetKeyspaceEvents).
	keyspaceEvents bool

	// version is the active cluster version (version.go); 0 reads as 1.
	// Every part decides under it (gate).
	version uint32

	// undo is the running script's undo log (script_undo.go): the parts
	// record in it what a script changed beyond the keys it names.
	undo undoLog

	// keyLocks is told when del removes a lock or frees a key.
	keyLocks keyLocks
}

// keyLocks is what the core asks of the lock ops when a key goes: the
// holds of a deleted lock end, and the key's waiters are offered it.
type keyLocks interface {
	// lockDeleted ends the holds of l, which del removed from key.
	lockDeleted(ctx *applyCtx, key string, l *Lock, reason Reason)
	// keyFreed offers key, whose value del removed, to its waiters once
	// the current step is over.
	keyFreed(ctx *applyCtx, key string)
}

func newKeySpace(cfg Config, locks keyLocks) *keySpace {
	ks := &keySpace{cfg: cfg, keyLocks: locks}
	ks.reset()
	return ks
}

// reset empties the key space; the limits and the lock ops stay.
func (t *keySpace) reset() {
	t.now = 0
	t.applied = 0
	t.keys = make(map[string]*Value)
	t.due = dueQueue{}
	t.nLocks, t.nHolds = 0, 0
	t.mem = 0
	t.reqs.init(0)
	t.version = 0
}

// Config returns the table's limits.
func (t *keySpace) Config() Config { return t.cfg }

// Now returns the FSM clock (ms): the largest command time applied so far.
func (t *keySpace) Now() int64 { return t.now }

// AppliedIndex returns the index of the last applied entry.
func (t *keySpace) AppliedIndex() uint64 { return t.applied }

// get returns the value at key, or nil. Inside Apply the due work of
// every key the command touches was done before it runs (expireDue, and
// settleFor past DueEventBudget), so this is a plain lookup.
func (t *keySpace) get(key string) *Value { return t.keys[key] }

// getAt returns the value at key as seen at time now without changing
// anything (read-only queries between entries). A value whose Deadline has
// passed is gone. For a lock, callers must still skip holds whose Deadline
// <= now (see liveHolds).
func (t *keySpace) getAt(key string, now int64) *Value {
	v := t.keys[key]
	if v == nil || (v.deadline() != 0 && v.deadline() <= now) {
		return nil
	}
	return v
}

// put stores the Redis value v at key, replacing whatever was there
// without events (the caller deletes a held lock first with del; a lock
// kept only for its waiters or lock-delay is dropped silently), bumps the
// version and schedules v's deadline.
func (t *keySpace) put(ctx *applyCtx, key string, v *Value) {
	t.putValue(ctx, key, v, t.keys[key] == nil)
}

// putValue is put; isNew says whether the key is new to the key space
// (the "new" keyspace event): SET over a lock it force-released first
// replaces a key that existed.
func (t *keySpace) putValue(ctx *applyCtx, key string, v *Value, isNew bool) {
	if old := t.keys[key]; old != nil {
		t.mem -= valueBytes(key, old)
		if old.Kind() == KindLock {
			t.countLock(old, -1)
		}
	}
	if isNew {
		ctx.notify(NotifyNew, key)
	}
	t.mem += valueBytes(key, v)
	v.Version = ctx.index
	t.keys[key] = v
	if d := v.deadline(); d != 0 {
		t.schedule(d, dueKey, key)
	}
	ctx.emit(Event{Kind: EvValueChanged, Key: key})
}

// putLock stores the new lock v at key, where nothing is.
func (t *keySpace) putLock(ctx *applyCtx, key string, v *Value) {
	ctx.notify(NotifyNew, key)
	v.Version = ctx.index
	t.keys[key] = v
	t.mem += valueBytes(key, v)
	t.countLock(v, 1)
	ctx.emit(Event{Kind: EvChanged, Key: key})
}

// countLock adds (sign 1) or removes (sign -1) the lock v and its holds
// to the counts Stats reports.
func (t *keySpace) countLock(v *Value, sign int) {
	t.nLocks += sign
	t.nHolds += sign * v.lock().numHolders()
}

// touch marks v (stored at key) as changed by this entry.
func (t *keySpace) touch(ctx *applyCtx, key string, v *Value) {
	if v.Kind() == KindLock {
		ctx.emit(Event{Kind: EvChanged, Key: key})
	} else if v.Version != ctx.index {
		// Once per entry: a value written and then changed by the same
		// entry (HSET of a new hash, a script) is one change.
		ctx.emit(Event{Kind: EvValueChanged, Key: key})
	}
	v.Version = ctx.index
}

// setDeadline sets a non-lock value's deadline (0 = persist).
func (t *keySpace) setDeadline(ctx *applyCtx, key string, v *Value, at int64) {
	v.valueData.expireAt = at
	t.touch(ctx, key, v)
	if at != 0 {
		t.schedule(at, dueKey, key)
	}
}

// del removes the value at key. A lock's holds end with reason (EvReleased
// each); then the key's waiters are offered it. It reports whether a value
// was there.
func (t *keySpace) del(ctx *applyCtx, key string, reason Reason) bool {
	v := t.keys[key]
	if v == nil {
		return false
	}
	delete(t.keys, key)
	t.mem -= valueBytes(key, v)
	if v.Kind() == KindLock {
		l := v.lock()
		t.countLock(v, -1)
		t.keyLocks.lockDeleted(ctx, key, l, reason)
		ctx.emit(Event{Kind: EvChanged, Key: key})
	} else {
		ctx.emit(Event{Kind: EvValueChanged, Key: key})
	}
	t.keyLocks.keyFreed(ctx, key)
	return true
}

// Due work: one min-heap per kind of (time, id); together they pop in
// (time, kind, id) order, a total order, so the pop order does not depend
// on the heaps' layout. A heap per kind keeps an item at 24 bytes (a
// million held locks keep a million dueHold items). Entries are hints:
// each handler re-checks the state, so a stale entry (a lease that was
// extended, a waiter already granted) is dropped. The heaps are derived
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
	duePump                         // the queue at id waits for a grant put off to a later entry
	dueKinds     = iota             // heaps in a dueQueue (index = kind-1)
)

type dueItem struct {
	at int64
	id string
}

func (a dueItem) less(b dueItem) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.id < b.id
}

// dueHeap is a min-heap of one kind's items, ordered by (at, id).
type dueHeap []dueItem

func (h dueHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h[j].less(h[i]) {
			break
		}
		h[i], h[j] = h[j], h[i]
		j = i
	}
}

func (h dueHeap) down(i int) {
	n := len(h)
	for {
		j := 2*i + 1
		if j >= n {
			return
		}
		if r := j + 1; r < n && h[r].less(h[j]) {
			j = r
		}
		if !h[j].less(h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

func (h *dueHeap) push(it dueItem) {
	*h = append(*h, it)
	h.up(len(*h) - 1)
}

// pop removes the minimum (the caller read it from (*h)[0]).
func (h *dueHeap) pop() {
	old := *h
	n := len(old) - 1
	old[0] = old[n]
	old[n] = dueItem{} // drop the id's reference
	*h = old[:n]
	if n > 0 {
		h.down(0)
	}
}

// init establishes the heap order of items appended in any order.
func (h dueHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// dueQueue holds a heap per kind.
type dueQueue [dueKinds]dueHeap

// next returns the kind whose head comes first in (at, kind, id) order;
// ok is false when every heap is empty.
func (q *dueQueue) next() (kind dueKind, it dueItem, ok bool) {
	for i := range q {
		if len(q[i]) == 0 {
			continue
		}
		// Kinds are visited in order, so only an earlier time wins.
		if h := q[i][0]; !ok || h.at < it.at {
			kind, it, ok = dueKind(i+1), h, true
		}
	}
	return kind, it, ok
}

// schedule asks for a due check of (kind, id) at FSM time at.
func (t *keySpace) schedule(at int64, kind dueKind, id string) {
	t.due[kind-1].push(dueItem{at: at, id: id})
}

// NextDeadline returns the earliest FSM time at which something may fall
// due (a lease, a wait, a session, a value's TTL, a lock-delay). The
// leader proposes a Tick when it passes. ok is false when nothing is
// scheduled. It may be a stale hint; a Tick for it is harmless.
func (t *keySpace) NextDeadline() (at int64, ok bool) {
	_, it, ok := t.due.next()
	return it.at, ok
}
