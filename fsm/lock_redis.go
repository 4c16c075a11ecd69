package fsm

import "slices"

// The lock side of the one key space: what the Redis commands (redis*.go,
// lua*.go) call to treat a native lock as a Redis string whose value is
// the holder's token (DESIGN.md "One key space").

// lockSpace is the lock ops as the rest of the one key space reaches them:
// the key-space core when del removes a lock (keyLocks), and the Redis
// commands and scripts, which see a lock as a string (redisLocks). It
// keeps the release tombstones, which only Redis releases leave.
type lockSpace struct {
	*lockTable

	// tombs are the release tombstones for Redlock quorum.
	tombs map[string]tombstone
}

// reset forgets every tombstone.
func (t *lockSpace) reset() { t.tombs = make(map[string]tombstone) }

// tombstone remembers the last few tokens that released a key by their
// own Redis release (compare-and-delete), each until that lease's old
// deadline, so a Redlock client repeating its compare-and-delete on
// another node of the same cluster is answered as the release was — even
// when another client took and released the key in between (redsync sends
// its unlocks to every node in parallel). Native releases (OpRelease)
// leave none.
type tombstone struct {
	recent []tombEntry // oldest first, at most maxTombsPerKey
	due    int64       // time of the pending dueTombstone item = min until
}

type tombEntry struct {
	owner string
	until int64
}

// maxTombsPerKey bounds the tokens remembered per key; a Redlock round
// finishes long before this many other holders come and go.
const maxTombsPerKey = 8

// tombstone records owner's release of key (until = the hold's deadline).
func (t *lockSpace) tombstone(key, owner string, until int64) {
	if until <= t.now {
		return
	}
	tb := t.tombs[key]
	t.mem -= tombBytes(key, tb)
	// Filtered in place: recent is never shared (snapshots copy entries
	// out, restores build their own), and a key cycled by one client
	// releases once per cycle, so a fresh slice each time was most of
	// this table's allocation under a lock-cycling load.
	kept := tb.recent[:0]
	for _, e := range tb.recent {
		if e.owner != owner {
			kept = append(kept, e)
		}
	}
	clear(tb.recent[len(kept):]) // drop the removed owners' strings
	if len(kept) == maxTombsPerKey {
		copy(kept, kept[1:])
		kept[len(kept)-1] = tombEntry{}
		kept = kept[:len(kept)-1]
	}
	kept = append(kept, tombEntry{owner: owner, until: until})
	tb.recent = kept
	if m := tb.minUntil(); tb.due == 0 || m < tb.due {
		tb.due = m
		t.schedule(m, dueTombstone, key)
	}
	t.tombs[key] = tb
	t.mem += tombBytes(key, tb)
}

func (tb tombstone) minUntil() int64 {
	var m int64
	for i, e := range tb.recent {
		if i == 0 || e.until < m {
			m = e.until
		}
	}
	return m
}

// expireTombstone forgets key's tombstones that fell due. Only the item
// matching tb.due acts, so the original and a restored table (whose heap
// holds no stale items) clean up at the same times.
func (t *lockSpace) expireTombstone(ctx *applyCtx, key string) {
	tb, ok := t.tombs[key]
	if !ok || tb.due != ctx.at {
		return
	}
	ctx.dueQuiet++
	t.mem -= tombBytes(key, tb)
	kept := tb.recent[:0:0]
	for _, e := range tb.recent {
		if e.until > ctx.at {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		delete(t.tombs, key)
		return
	}
	tb.recent = kept
	tb.due = tb.minUntil()
	t.schedule(tb.due, dueTombstone, key)
	t.tombs[key] = tb
	t.mem += tombBytes(key, tb)
}

// redisTombstone reports whether token released key by its own release
// and that lease's old deadline has not passed at now.
func (t *lockSpace) redisTombstone(key, token string, now int64) bool {
	for _, e := range t.tombs[key].recent {
		if e.owner == token && e.until > now {
			return true
		}
	}
	return false
}

// redisLockToken returns the exclusive holder's owner token of a lock
// value (GET on a lock key); ok=false if it has no single exclusive holder.
func (l *Lock) redisToken() (string, bool) {
	if l.numHolders() == 1 && l.h0.Mode == Exclusive {
		return l.h0.Owner, true
	}
	return "", false
}

// redisSetNX implements `SET key token NX PX ttl`: it creates an exclusive,
// non-reentrant lock held by token, fenced with ctx.index. If token already
// holds it exclusively it succeeds and changes nothing; otherwise (another
// holder, another value, lock-delay, queued waiters, limits) it fails.
// ttl <= 0 (no PX/EX given) means MaxTTL: a lock never outlives the lease
// limit. A ttl over MaxTTL (the caller refuses it with leaseOverLimit) or
// under MinTTL fails.
func (t *lockSpace) redisSetNX(ctx *applyCtx, key string, tokenB []byte, ttl int64) bool {
	token := string(tokenB) // does not escape: kept only inside kt below
	if t.cfg.checkKey(key) != nil || t.cfg.checkOwner(token) != nil {
		return false
	}
	if ttl <= 0 {
		ttl = t.cfg.MaxTTL
	}
	if t.cfg.checkTTL("ttl", ttl) != nil {
		return false
	}
	if v := t.keys[key]; v != nil {
		if v.Kind() == KindLock {
			if h := v.lock().holdOf(token); h != nil && h.Mode == Exclusive {
				return true
			}
		}
		return false
	}
	if len(t.queues[key]) > 0 || len(t.keys) >= t.cfg.MaxKeys {
		return false
	}
	// The key and the token share one allocation: a held lock costs one
	// string (and one object for the GC) less. Both came from the
	// command's bytes, so this adds no allocation.
	kt := key + token
	w := Waiter{Owner: kt[len(key):], Mode: Exclusive, TTL: ttl}
	t.grantKey(ctx, kt[:len(key)], &w)
	return true
}

// redisLockExpire implements PEXPIRE on a lock key: every hold's deadline
// becomes at (capped by its HardLimit; a session-bound hold gets a deadline
// of its own); at <= now ends them (ReasonExpired, lock-delay applies).
// The callers refuse an at past now+MaxTTL.
func (t *lockSpace) redisLockExpire(ctx *applyCtx, key string, at int64) {
	if v := t.keys[key]; v != nil && v.Kind() == KindLock {
		t.redisLockExpireValue(ctx, key, v, at)
	}
}

// redisLockExpireValue is redisLockExpire for v, the lock at key, already
// looked up: a renewal script finds it before it compares the token, and
// holding many locks renews one per lock (a second lookup on a large key
// map is a second hash and probe per renewal).
func (t *lockSpace) redisLockExpireValue(ctx *applyCtx, key string, v *Value, at int64) {
	l := v.lock()
	if at <= ctx.now {
		for l.numHolders() > 0 {
			t.endHoldAs(ctx, key, l, 0, ReasonExpired, NotifyDel)
		}
		t.settle(ctx, key)
		return
	}
	for i := 0; i < l.numHolders(); i++ {
		h := l.holder(i)
		h.Deadline = capAt(at, h.hardLimit())
		h.Extended = ctx.now
		t.scheduleHold(key, l, h.Deadline)
	}
	t.touch(ctx, key, v)
	ctx.notify(NotifyExpire, key)
}

// redisReleaseByToken is compare-and-delete on a lock: true if token held
// key and that hold ended (ReasonRelease, leaving a tombstone).
func (t *lockSpace) redisReleaseByToken(ctx *applyCtx, key, token string) bool {
	v := t.keys[key]
	if v == nil || v.Kind() != KindLock {
		return false
	}
	l := v.lock()
	i := l.holdIndex(token)
	if i < 0 {
		return false
	}
	t.tombstone(key, token, t.holdDeadline(l.holder(i)))
	t.endHold(ctx, key, l, i, ReasonRelease)
	t.settle(ctx, key)
	return true
}

// lockDeleted ends the holds of l, which del removed from key (keyLocks).
func (t *lockSpace) lockDeleted(ctx *applyCtx, key string, l *Lock, reason Reason) {
	t.dropLock(key, l)
	for i := 0; i < l.numHolders(); i++ {
		t.holdEnded(ctx, key, l.holder(i), reason)
	}
}

// holdEnded is called by del for each hold of a lock it removed: a Redis
// command ended it. When that was its owner's own release
// (compare-and-delete), a tombstone remembers it (lock_redis.go).
func (t *lockSpace) holdEnded(ctx *applyCtx, key string, h *hold, reason Reason) {
	if reason == ReasonRelease {
		t.tombstone(key, h.Owner, t.holdDeadline(h))
	}
	t.holdGone(ctx, key, h, reason)
}

// saveKeyUndo returns key's lock state beside its value, for the undo
// log of a running script (redisLocks).
func (t *lockSpace) saveKeyUndo(key string) keyLockUndo {
	var u keyLockUndo
	if tb, ok := t.tombs[key]; ok {
		tb.recent = slices.Clone(tb.recent) // filtered in place (tombstone)
		u.tomb, u.hasTomb = tb, true
	}
	u.holdDue, u.hasHoldDue = t.goneHoldDue[key]
	return u
}

// restoreKeyUndo puts back what saveKeyUndo returned.
func (t *lockSpace) restoreKeyUndo(key string, u keyLockUndo) {
	if u.hasTomb {
		t.tombs[key] = u.tomb
	} else {
		delete(t.tombs, key)
	}
	if u.hasHoldDue {
		t.goneHoldDue[key] = u.holdDue
	} else {
		delete(t.goneHoldDue, key)
	}
}

// fenceMark is the highest fence issued, which a failed script's grants
// must not have raised.
func (t *lockSpace) fenceMark() uint64 { return t.maxFence }

// restoreFenceMark puts back what fenceMark returned.
func (t *lockSpace) restoreFenceMark(f uint64) { t.maxFence = f }

// revertSessHold undoes one change to the session index of holds.
func (t *lockSpace) revertSessHold(s undoSess) {
	if s.added {
		t.sessDelHold(s.sess, s.key, s.owner)
	} else {
		t.sessAddHold(s.sess, s.key, s.owner)
	}
}
