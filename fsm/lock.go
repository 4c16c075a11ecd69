package fsm

import (
	"fmt"
)

// The native lock table: acquire and grants. Waiting and hand-off are in
// lock_wait.go, release, extend and expiry in lock_lease.go, sessions in
// session.go, exactly-once in dedupe.go, the Redis contract in
// lock_redis.go.

// MaxLockKeys bounds the keys of one multi-lock command (api.DefaultMaxKeys).
const MaxLockKeys = 1024

// holdRef names one hold: owner's hold on key.
type holdRef struct{ key, owner string }

// holdOf returns owner's hold on l, or nil.
func (l *Lock) holdOf(owner string) *hold {
	if i := l.holdIndex(owner); i >= 0 {
		return l.holder(i)
	}
	return nil
}

// holdIndex returns the position of owner's hold on l, or -1.
func (l *Lock) holdIndex(owner string) int {
	if l.h0.Owner == owner && owner != "" {
		return 0
	}
	if x := l.rare(); x != nil {
		for i, h := range x.more {
			if h.Owner == owner {
				return i + 1
			}
		}
	}
	return -1
}

// holdDeadline is when h ends if nothing changes: its own deadline, or for
// a hold bound to a session the session's deadline capped by the hold's
// own (HardLimit, or a Redis PEXPIRE). 0 = none.
func (t *sessionTable) holdDeadline(h *hold) int64 {
	if h.opt == nil || h.opt.session == "" {
		return h.Deadline
	}
	var d int64
	if s := t.sessions[h.opt.session]; s != nil {
		d = s.Deadline
	}
	if h.Deadline != 0 && (d == 0 || h.Deadline < d) {
		d = h.Deadline
	}
	return d
}

// lockTable is the lock ops of a Table: native locks' holds and grants,
// releases, leases, lock-delay, the fence registry and the read-only
// queries (query.go). The locks themselves are values of the key-space
// core; the acquires that wait are its waitQueue, the sessions that
// holds and waiters may be bound to its sessionTable.
type lockTable struct {
	*keySpace
	*sessionTable
	*waitQueue

	fences map[string]uint64 // fence registry (CheckAndAdvance)

	// goneHoldDue is the time of the pending dueHold item of keys whose
	// lock is gone while the item is not (Value.holdDue holds it while the
	// lock exists), so a lock acquired and released in a loop keeps one
	// heap entry, not one per grant. Derived.
	goneHoldDue map[string]int64

	// maxFence is the highest fence ever granted (the index of the
	// latest entry that created a hold): the fence registry refuses a
	// token above it, which no grant issued and which would otherwise
	// block the resource for every later holder.
	maxFence uint64
}

// reset empties the lock state.
func (t *lockTable) reset() {
	t.fences = make(map[string]uint64)
	t.goneHoldDue = make(map[string]int64)
	t.maxFence = 0
}

func errf(base error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{base}, args...)...)
}

// checkKey validates a lock or resource name.
func (c *Config) checkKey(k string) error {
	if k == "" {
		return errf(ErrBadCommand, "empty key")
	}
	if len(k) > c.MaxKeyBytes {
		return errf(ErrLimit, "key longer than %d bytes", c.MaxKeyBytes)
	}
	return nil
}

func (c *Config) checkOwner(o string) error {
	if o == "" {
		return errf(ErrBadCommand, "empty owner")
	}
	if len(o) > c.MaxOwnerBytes {
		return errf(ErrLimit, "owner longer than %d bytes", c.MaxOwnerBytes)
	}
	return nil
}

func (c *Config) checkTTL(name string, ttl int64) error {
	if ttl < c.MinTTL || ttl > c.MaxTTL {
		return errf(ErrBadTTL, "%s %d ms not in [%d, %d]", name, ttl, c.MinTTL, c.MaxTTL)
	}
	return nil
}

// cmdKeys returns the command's keys (Keys, or Key alone), validated.
// one is scratch space for the single-key case, so it costs no allocation.
func (c *Config) cmdKeys(cmd *Command, one *[1]string) ([]string, error) {
	keys := cmd.Keys
	if len(keys) == 0 {
		one[0] = cmd.Key
		keys = one[:]
	}
	if len(keys) > MaxLockKeys {
		return nil, errf(ErrLimit, "more than %d keys", MaxLockKeys)
	}
	for i, k := range keys {
		if err := c.checkKey(k); err != nil {
			return nil, err
		}
		for _, k2 := range keys[:i] {
			if k2 == k {
				return nil, errf(ErrBadCommand, "duplicate key %q", k)
			}
		}
	}
	return keys, nil
}

// permitsOf is the lock size a request of mode with permits expects: the
// semaphore size, or 0 for mutex and reader-writer locks.
func permitsOf(mode Mode, permits int) int {
	if mode == Semaphore {
		return permits
	}
	return 0
}

// acquire handles OpAcquire.
func (t *lockTable) acquire(ctx *applyCtx, cmd *Command) Result {
	var one [1]string
	keys, err := t.cfg.cmdKeys(cmd, &one)
	if err != nil {
		return Result{Err: err}
	}
	if err := t.checkAcquire(cmd); err != nil {
		return Result{Err: err}
	}
	if cmd.Wait > 0 {
		if w := t.waiters[cmd.ReqID]; w != nil {
			// A retry of an acquire that is still queued (its request id
			// was forgotten, or never remembered): it keeps its place.
			if w.Owner != cmd.Owner {
				return Result{Err: errf(ErrBadCommand, "waiter id %q in use", cmd.ReqID)}
			}
			return Result{Queued: true, Deadline: w.Deadline}
		}
	}
	// w.Keys stays nil: keys travel separately so the single-key scratch
	// array does not escape (escape analysis is not field-sensitive).
	w := Waiter{
		ID: cmd.ReqID, Owner: cmd.Owner, Mode: cmd.Mode,
		Permits: permitsOf(cmd.Mode, cmd.Permits), TTL: cmd.TTL, Session: cmd.Session,
		Reentrant: cmd.Reentrant, LockDelay: cmd.LockDelay, MaxHold: cmd.MaxHold, Meta: cmd.Meta,
	}
	// Refusals that waiting cannot cure come first, whatever the order of
	// keys; then the first key that blocks decides a try-acquire's error.
	var block error
	newKeys := 0
	for _, k := range keys {
		v := t.keys[k]
		err := t.keyBlock(k, v, &w)
		switch err {
		case nil:
			if v == nil {
				newKeys++
			}
			if len(t.queues[k]) > 0 && !t.ownerHolds(k, w.Owner) {
				err = errf(ErrLocked, "%q has waiters ahead", k)
			}
		case errUpgrade, errPermits, errCount:
			return Result{Err: err}
		}
		if err != nil && block == nil {
			block = err
		}
	}
	if block == nil {
		if len(t.keys)+newKeys > t.cfg.MaxKeys {
			return Result{Err: errf(ErrLimit, "key space full (%d keys)", t.cfg.MaxKeys)}
		}
		if t.overMemory() && t.grantGrows(keys, w.Owner) {
			return Result{Err: t.errOOM()}
		}
		return t.grantAll(ctx, &w, keys)
	}
	if cmd.Wait <= 0 {
		return Result{Err: block}
	}
	for _, k := range keys {
		if len(t.queues[k]) >= t.cfg.MaxWaitersPerKey {
			return Result{Err: errf(ErrLimit, "%q has %d waiters", k, t.cfg.MaxWaitersPerKey)}
		}
	}
	if t.overMemory() {
		return Result{Err: t.errOOM()}
	}
	// Built field by field: copying w would let the single-key scratch
	// array escape, costing every acquire an allocation.
	nw := &Waiter{
		ID: w.ID, Keys: append([]string(nil), keys...), Owner: w.Owner, Mode: w.Mode,
		Permits: w.Permits, TTL: w.TTL, Deadline: ctx.now + cmd.Wait, Session: w.Session,
		Reentrant: w.Reentrant, LockDelay: w.LockDelay, MaxHold: w.MaxHold, Enqueued: ctx.index,
		Queued: ctx.now, Meta: w.Meta,
	}
	t.enqueue(nw)
	return Result{Queued: true, Deadline: nw.Deadline}
}

// grantGrows reports whether granting keys to owner adds a hold: some key
// is free or not held by owner yet (a reentrant or repeated acquire by
// the holder only counts up or changes nothing).
func (t *lockTable) grantGrows(keys []string, owner string) bool {
	for _, k := range keys {
		if v := t.keys[k]; v == nil || v.Kind() != KindLock || v.lock().holdIndex(owner) < 0 {
			return true
		}
	}
	return false
}

// checkAcquire validates everything of an acquire but its keys.
func (t *lockTable) checkAcquire(cmd *Command) error {
	if err := t.cfg.checkOwner(cmd.Owner); err != nil {
		return err
	}
	if err := t.cfg.checkMeta(cmd.Meta); err != nil {
		return err
	}
	switch {
	case cmd.Mode > Semaphore:
		return errf(ErrBadCommand, "unknown mode %d", cmd.Mode)
	case cmd.Permits < 0 || (cmd.Mode == Semaphore && cmd.Permits < 1):
		return errf(ErrBadCommand, "semaphore needs permits >= 1")
	case cmd.Permits > t.cfg.MaxPermits:
		return errf(ErrLimit, "permits %d is over the limit of %d", cmd.Permits, t.cfg.MaxPermits)
	case cmd.Wait < 0 || cmd.Wait > t.cfg.MaxTTL:
		return errf(ErrBadTTL, "wait %d ms not in [0, %d]", cmd.Wait, t.cfg.MaxTTL)
	case cmd.Wait > 0 && cmd.ReqID == "":
		return errf(ErrBadCommand, "a waiting acquire needs a request id")
	case cmd.LockDelay < 0 || cmd.LockDelay > t.cfg.MaxTTL:
		return errf(ErrBadTTL, "lock-delay %d ms not in [0, %d]", cmd.LockDelay, t.cfg.MaxTTL)
	case cmd.MaxHold < 0 || cmd.MaxHold > t.cfg.MaxTTL:
		return errf(ErrBadTTL, "max hold %d ms not in [0, %d]", cmd.MaxHold, t.cfg.MaxTTL)
	}
	if cmd.Session != "" {
		// A session-bound hold lives as long as its session (doc.go); a
		// TTL is optional then but must still be sane.
		if cmd.TTL != 0 {
			if err := t.cfg.checkTTL("ttl", cmd.TTL); err != nil {
				return err
			}
		}
		if t.sessions[cmd.Session] == nil {
			return errf(ErrSessionUnknown, "%q", cmd.Session)
		}
		return nil
	}
	return t.cfg.checkTTL("ttl", cmd.TTL)
}

// Refusals of keyBlock that waiting cannot cure.
var (
	errUpgrade = errf(ErrLocked, "the owner holds the lock in another mode")
	errPermits = errf(ErrPermits, "the lock exists with another size or kind")
	errCount   = errf(ErrLimit, "reentrant hold count at its limit")
)

// keyBlock says why w cannot take key (whose value is v) now, ignoring
// the key's queue; nil if it can (free, compatible, or already held by w's
// owner in w's mode).
func (t *lockTable) keyBlock(key string, v *Value, w *Waiter) error {
	if v == nil {
		return nil
	}
	if v.Kind() != KindLock {
		return errf(ErrLocked, "%q holds a Redis value", key)
	}
	l := v.lock()
	if l.Permits() != w.Permits {
		return errPermits
	}
	if h := l.holdOf(w.Owner); h != nil {
		if h.Mode != w.Mode {
			return errUpgrade
		}
		if w.Reentrant && h.Count >= maxHoldCount {
			return errCount
		}
		return nil
	}
	if d := l.DelayUntil(); d > t.now {
		return errf(ErrLockDelay, "%q until %d", key, d)
	}
	n := l.numHolders()
	switch w.Mode {
	case Exclusive:
		if n > 0 {
			return ErrLocked
		}
	case Shared:
		if n > 0 && l.h0.Mode != Shared {
			return ErrLocked
		}
	case Semaphore:
		if n >= l.Permits() && !(mutant("permit-too-many") && n == l.Permits()) {
			return ErrLocked
		}
	}
	return nil
}

func (t *lockTable) ownerHolds(key, owner string) bool {
	v := t.keys[key]
	return v != nil && v.Kind() == KindLock && v.lock().holdIndex(owner) >= 0
}

// grantAll gives w every one of its keys (the caller checked they fit).
// Existing holds of w's owner are kept (non-reentrant: idempotent) or
// counted up (reentrant). The result carries the highest fence, the
// earliest deadline and the first key's count.
func (t *lockTable) grantAll(ctx *applyCtx, w *Waiter, keys []string) Result {
	r := Result{Granted: true}
	for i, k := range keys {
		h := t.grantKey(ctx, k, w)
		t.foldHold(&r, i, h)
	}
	return r
}

// foldHold adds the hold on the i-th key of a multi-key grant or extend
// to r: the highest fence, the earliest deadline and the first key's count.
func (t *lockTable) foldHold(r *Result, i int, h *hold) {
	if h.Fence > r.Fence {
		r.Fence = h.Fence
	}
	if d := t.holdDeadline(h); i == 0 || (d != 0 && (r.Deadline == 0 || d < r.Deadline)) {
		r.Deadline = d
	}
	if i == 0 {
		r.Count = int(h.Count)
	}
}

// grantKey gives key to w and returns the hold.
func (t *lockTable) grantKey(ctx *applyCtx, key string, w *Waiter) *hold {
	v := t.keys[key]
	var l *Lock
	if v == nil {
		v = &Value{}
		l = v.lock()
		if w.Permits != 0 {
			l.rareAlloc().permits = w.Permits
		}
		t.putLock(ctx, key, v)
	} else {
		l = v.lock()
		if old := l.holdOf(w.Owner); old != nil {
			// The hold keeps its grant time and metadata: it is the
			// same hold, counted up.
			if w.Reentrant {
				old.Count++
				old.Reentrant = true
				if w.TTL != 0 && old.session() == "" {
					if d := capAt(ctx.now+w.TTL, old.hardLimit()); d > old.Deadline {
						old.Deadline = d
						old.Extended = ctx.now
						t.scheduleHold(key, l, d)
						ctx.notify(NotifyExpire, key)
					}
				}
				t.touch(ctx, key, v)
			}
			return old
		}
		t.touch(ctx, key, v)
	}
	h := l.addHolder()
	t.nHolds++
	h.Owner = w.Owner
	h.Mode = w.Mode
	h.Count = 1
	h.Reentrant = w.Reentrant
	h.Fence = ctx.index
	if mutant("fence-not-bumped") && t.maxFence > 0 {
		h.Fence = t.maxFence
	}
	t.maxFence = max(t.maxFence, ctx.index)
	h.TTL = w.TTL
	h.Granted, h.Extended = ctx.now, 0
	var hardLimit int64
	if w.MaxHold > 0 {
		hardLimit = ctx.now + w.MaxHold
	}
	h.setOpts(w.Session, w.LockDelay, hardLimit, w.Meta)
	t.mem += holdBytes(h)
	if w.Session != "" {
		h.Deadline = hardLimit
		t.sessAddHold(w.Session, key, w.Owner)
	} else {
		h.Deadline = capAt(ctx.now+w.TTL, hardLimit)
	}
	ctx.notify(NotifySet, key)
	if h.Deadline != 0 {
		t.scheduleHold(key, l, h.Deadline)
		ctx.notify(NotifyExpire, key)
	}
	return h
}

// capAt returns d capped by limit (0 = no limit).
func capAt(d, limit int64) int64 {
	if limit != 0 && d > limit {
		return limit
	}
	return d
}

// scheduleHold makes sure a dueHold item for key (whose lock is l) exists
// at or before at.
func (t *lockTable) scheduleHold(key string, l *Lock, at int64) {
	if l.holdDue == 0 {
		// An item scheduled for an earlier lock at key may still be
		// pending (see dropLock); this lock takes it over.
		if cur, ok := t.goneHoldDue[key]; ok {
			delete(t.goneHoldDue, key)
			l.holdDue = cur
		}
	}
	if mutant("lease-early") {
		at -= mutantEarly
	}
	if l.holdDue != 0 && l.holdDue <= at {
		return
	}
	l.holdDue = at
	t.schedule(at, dueHold, key)
}

// dropLock is called when the lock l leaves key: its pending dueHold item
// stays in the heap, so it is remembered per key and a lock taken and
// released in a loop keeps one heap item, not one per grant.
func (t *lockTable) dropLock(key string, l *Lock) {
	if l.holdDue != 0 {
		t.goneHoldDue[key] = l.holdDue
	}
}
