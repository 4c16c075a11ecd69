package fsm

import (
	"container/list"
	"maps"
	"slices"
)

// A script that fails changes nothing (DESIGN.md "Scripts"): a runtime
// error, a raised error reply, the step budget or the memory limit undoes
// every write the script made before it, so the table, its accounting and
// the entry's events are exactly as before the script started. Redis
// keeps a failed script's earlier writes; a lock service cannot, as a
// half-run script would leave a lock half taken.
//
// The undo log records, on the first write a script makes to a key, that
// key's prior state (its value, deep-copied, its release tombstones and
// its pending dueHold time), and restores them in reverse order on
// failure. What the Redis commands change beyond their keys is small and
// saved whole: the table's counters (memory, locks, holds, the highest
// fence), the lengths of the entry's event and freed-key lists, and the
// session index changes a forced release makes. Waiters are not offered a
// key a script frees until the script has finished (pumps), so a script
// never grants a queued waiter it could not take back. Due-queue items a
// script scheduled stay: each is a hint its handler re-checks against the
// restored state.
//
// The copy of a key's value is charged to the script's memory budget, so
// undoing can never cost more than the budget allows.

// undoLog is the undo state of the running script; on is false between
// scripts. It is reused from script to script (no allocation for scripts
// that write nothing).
type undoLog struct {
	on bool
	// failed is set by runScript: the script raised an error or hit a limit.
	// It keeps the last run's outcome until the next one begins.
	failed bool

	seen  map[string]struct{} // keys saved so far
	keys  []undoKey           // in first-write order
	sess  []undoSess          // session index changes, in order
	pumps []string            // keys to offer their waiters once the script succeeded

	mem            int64
	nLocks, nHolds int
	maxFence       uint64
	events, freed  int

	// cacheAt is where the EVAL-cached script EVALSHA made most recently
	// used stood; EVALSHA sets it just before the run.
	cacheAt cacheMark
}

// cacheMark is an EVAL-cached script's place in the least-recently-used
// order: its element and the one after it (nil: it was last).
type cacheMark struct{ el, next *list.Element }

// markOf returns the place of the EVAL-cached script sha (zero if it is
// not one).
func (c *scriptCache) markOf(sha string) cacheMark {
	if el, ok := c.evals[sha]; ok {
		return cacheMark{el, el.Next()}
	}
	return cacheMark{}
}

// maxUndoKept bounds the keys whose room the undo log keeps between
// scripts.
const maxUndoKept = 1024

// undoKey is one key's state before the script's first write to it.
type undoKey struct {
	key   string
	ptr   *Value // the value object at key; nil = no value
	val   Value  // a deep copy of *ptr
	locks keyLockUndo
}

// keyLockUndo is what the lock ops keep for a key beside its value: its
// release tombstones and its pending dueHold time (redisLocks).
type keyLockUndo struct {
	tomb       tombstone
	hasTomb    bool
	holdDue    int64
	hasHoldDue bool
}

// undoSess is one change to the session index of holds.
type undoSess struct {
	sess, key, owner string
	added            bool
}

// begin starts recording for a script run in ctx.
func (u *undoLog) begin(t *keySpace, maxFence uint64, ctx *applyCtx) {
	u.on, u.failed = true, false
	u.mem, u.nLocks, u.nHolds, u.maxFence = t.mem, t.nLocks, t.nHolds, maxFence
	u.events, u.freed = len(ctx.events), len(ctx.freed)
}

// end stops recording: on success the waiters of the keys the script
// freed are offered them; on failure everything is undone.
func (t *scripts) undoEnd(ctx *applyCtx) (failed bool) {
	u := &t.undo
	failed = u.failed
	u.on = false
	if failed {
		t.rollback(ctx)
	} else {
		for _, k := range u.pumps {
			t.locks.pump(ctx, k)
		}
	}
	clear(u.seen)
	clear(u.keys) // drop the copies for the collector
	u.keys, u.sess, u.pumps = u.keys[:0], u.sess[:0], u.pumps[:0]
	if cap(u.keys) > maxUndoKept {
		// A script that wrote thousands of keys is rare: do not keep
		// its log's size for every later script.
		u.seen, u.keys = nil, nil
	}
	u.cacheAt = cacheMark{}
	return failed
}

// rollback restores what the script changed, newest first.
func (t *scripts) rollback(ctx *applyCtx) {
	u := &t.undo
	for i := len(u.sess) - 1; i >= 0; i-- {
		t.locks.revertSessHold(u.sess[i])
	}
	for i := len(u.keys) - 1; i >= 0; i-- {
		k := &u.keys[i]
		if k.ptr == nil {
			delete(t.keys, k.key)
		} else {
			*k.ptr = k.val
			t.keys[k.key] = k.ptr
		}
		t.locks.restoreKeyUndo(k.key, k.locks)
	}
	t.mem, t.nLocks, t.nHolds = u.mem, u.nLocks, u.nHolds
	t.locks.restoreFenceMark(u.maxFence)
	clear(ctx.events[u.events:]) // drop what they point to
	ctx.events = ctx.events[:u.events]
	ctx.freed = ctx.freed[:u.freed]
	if m := u.cacheAt; m.el != nil && m.next != nil {
		t.cache.lru.MoveBefore(m.el, m.next)
	}
}

// undoCost is what saving the keys a write command names would copy, in
// the accounted bytes of memory.go; 0 when nothing is recorded.
func (t *scripts) undoCost(name string, args [][]byte) int64 {
	u := &t.undo
	if !u.on {
		return 0
	}
	var n int64
	for _, k := range CommandKeysOf(name, args) {
		if _, ok := u.seen[string(k)]; ok {
			continue
		}
		if v := t.keys[string(k)]; v != nil {
			n += valueBytes(string(k), v)
		}
	}
	return n
}

// undoSave records the state of the keys the write command names, unless
// already recorded in this script.
func (t *scripts) undoSave(name string, args [][]byte) {
	u := &t.undo
	if !u.on {
		return
	}
	for _, k := range CommandKeysOf(name, args) {
		key := string(k)
		if _, ok := u.seen[key]; ok {
			continue
		}
		if u.seen == nil {
			u.seen = make(map[string]struct{})
		}
		u.seen[key] = struct{}{}
		e := undoKey{key: key}
		if v := t.keys[key]; v != nil {
			e.ptr, e.val = v, cloneValue(v)
		}
		e.locks = t.locks.saveKeyUndo(key)
		u.keys = append(u.keys, e)
	}
}

// undoSessHold records a change to the session index of holds.
func (t *keySpace) undoSessHold(sess, key, owner string, added bool) {
	if u := &t.undo; u.on {
		u.sess = append(u.sess, undoSess{sess: sess, key: key, owner: owner, added: added})
	}
}

// undoDeferPump reports whether key's waiters must wait for the running
// script to succeed (it then records key).
func (t *keySpace) undoDeferPump(key string) bool {
	u := &t.undo
	if u.on {
		u.pumps = append(u.pumps, key)
	}
	return u.on
}

// cloneValue returns a copy of v that shares nothing the commands change
// in place: collections, the lock's holds and their options. Byte slices
// are shared: commands replace them, never write into them.
func cloneValue(v *Value) Value {
	c := *v
	c.h0 = cloneHold(&v.h0)
	if v.valueData == nil {
		return c
	}
	d := *v.valueData
	d.Hash = maps.Clone(d.Hash)
	d.Set = maps.Clone(d.Set)
	d.ZSet = maps.Clone(d.ZSet)
	d.List = slices.Clone(d.List)
	if d.lockRare != nil {
		x := *d.lockRare
		x.more = make([]*hold, len(d.lockRare.more))
		for i, h := range d.lockRare.more {
			hc := cloneHold(h)
			x.more[i] = &hc
		}
		if len(x.more) == 0 {
			x.more = nil
		}
		d.lockRare = &x
	}
	c.valueData = &d
	return c
}

func cloneHold(h *hold) hold {
	c := *h
	if h.opt != nil {
		o := *h.opt
		c.opt = &o
	}
	return c
}
