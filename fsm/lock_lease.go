package fsm

import "slices"

// Ending and renewing holds: release, extend, expiry, lock-delay, and the
// fence registry.

// endHold removes the i-th hold of l (the lock at key) with reason.
// Lock-delay applies when the hold was lost (expiry, session loss), never
// after a clean release. The caller settles the key afterwards.
func (t *lockTable) endHold(ctx *applyCtx, key string, l *Lock, i int, reason Reason) {
	t.endHoldAs(ctx, key, l, i, reason, holdEndEvent(reason))
}

// endHoldAs is endHold with the keyspace event to emit (PEXPIRE in the
// past ends holds as expired, yet Redis calls that a "del").
func (t *lockTable) endHoldAs(ctx *applyCtx, key string, l *Lock, i int, reason Reason, event string) {
	h := l.removeHolder(i)
	t.nHolds--
	t.mem -= holdBytes(&h)
	t.holdGone(ctx, key, &h, reason)
	ctx.notify(event, key)
	if d := h.lockDelay(); (reason == ReasonExpired || reason == ReasonSession) && d > 0 {
		if until := ctx.now + d; until > l.DelayUntil() {
			l.setDelayUntil(until)
			t.schedule(until, dueDelay, key)
		}
		// The lock stays for its lock-delay, with its fence.
		l.keepFence(h.Fence)
	}
}

// holdGone is the bookkeeping of a hold that ended: the event and the
// session index. Native releases leave no tombstone: only Redlock clients
// vote by repeating a release on several nodes.
func (t *lockTable) holdGone(ctx *applyCtx, key string, h *hold, reason Reason) {
	ctx.emit(Event{Kind: EvReleased, Key: key, Owner: h.Owner, Fence: h.Fence, Reason: reason, Granted: h.Granted})
	if h.Fence == ctx.index && ctx.index != 0 && !slices.Contains(ctx.lostFresh, key) {
		ctx.lostFresh = append(ctx.lostFresh, key)
	}
	if s := h.session(); s != "" {
		t.sessDelHold(s, key, h.Owner)
	}
}

// settle deletes the lock at key if nothing holds it and no lock-delay is
// active, marks it changed otherwise, then offers the key to its waiters.
func (t *lockTable) settle(ctx *applyCtx, key string) {
	t.settleValue(ctx, key, t.keys[key])
}

// settleValue is settle for the value v found at key.
func (t *lockTable) settleValue(ctx *applyCtx, key string, v *Value) {
	if v != nil && v.Kind() == KindLock {
		if l := v.lock(); l.numHolders() == 0 && l.DelayUntil() <= ctx.now {
			delete(t.keys, key)
			t.mem -= valueBytes(key, v)
			t.countLock(v, -1)
			t.dropLock(key, l)
			ctx.emit(Event{Kind: EvChanged, Key: key})
		} else {
			t.touch(ctx, key, v)
		}
	}
	if t.undoDeferPump(key) {
		return // a script runs: its waiters are offered the key once it succeeded
	}
	t.pump(ctx, key)
}

// lockAt returns the lock at key, or an error saying why there is none
// that could be released or extended.
func (t *lockTable) lockAt(key string) (*Value, error) {
	v := t.keys[key]
	switch {
	case v == nil:
		return nil, errf(ErrNotHeld, "%q", key)
	case v.Kind() != KindLock:
		return nil, errf(ErrWrongType, "%q holds a Redis value", key)
	case v.lock().numHolders() == 0:
		return nil, errf(ErrNotHeld, "%q", key)
	}
	return v, nil
}

// release handles OpRelease: all keys are checked before any changes.
func (t *lockTable) release(ctx *applyCtx, cmd *Command) Result {
	var one [1]string
	keys, err := t.cfg.cmdKeys(cmd, &one)
	if err != nil {
		return Result{Err: err}
	}
	if !cmd.Force {
		if err := t.cfg.checkOwner(cmd.Owner); err != nil {
			return Result{Err: err}
		}
	}
	var single *Value // the value of a single-key release, looked up once
	for _, k := range keys {
		v, err := t.lockAt(k)
		if err != nil {
			return Result{Err: err}
		}
		if !cmd.Force && v.lock().holdIndex(cmd.Owner) < 0 && !mutant("release-any-owner") {
			return Result{Err: errf(ErrNotOwner, "%q", k)}
		}
		if len(keys) == 1 {
			single = v
		}
	}
	r := Result{Released: true}
	for i, k := range keys {
		v := single
		if v == nil {
			v = t.keys[k]
		}
		l := v.lock()
		if cmd.Force {
			if i == 0 {
				r.Fence = l.h0.Fence
			}
			for l.numHolders() > 0 {
				t.endHold(ctx, k, l, 0, ReasonForced)
			}
			t.settleValue(ctx, k, v)
			continue
		}
		j := l.holdIndex(cmd.Owner)
		if j < 0 && mutant("release-any-owner") {
			if l.numHolders() == 0 {
				continue
			}
			j = 0
		}
		h := l.holder(j)
		if i == 0 {
			r.Fence = h.Fence
		}
		if cmd.Reentrant && h.Count > 1 {
			h.Count--
			if i == 0 {
				r.Count = int(h.Count)
			}
			r.Released = false
			t.touch(ctx, k, v)
			continue
		}
		t.endHold(ctx, k, l, j, ReasonRelease)
		t.settleValue(ctx, k, v)
	}
	return r
}

// extend handles OpExtend. A lease is reset to now+TTL (the command's, or
// the hold's own when 0), clamped to the hold's HardLimit; a hold already
// at its HardLimit is refused with ErrMaxHold. A hold bound to a session
// has no lease of its own: extending it keeps the session alive.
func (t *lockTable) extend(ctx *applyCtx, cmd *Command) Result {
	var one [1]string
	keys, err := t.cfg.cmdKeys(cmd, &one)
	if err != nil {
		return Result{Err: err}
	}
	if err := t.cfg.checkOwner(cmd.Owner); err != nil {
		return Result{Err: err}
	}
	if cmd.TTL != 0 {
		if err := t.cfg.checkTTL("ttl", cmd.TTL); err != nil {
			return Result{Err: err}
		}
	}
	for _, k := range keys {
		v, err := t.lockAt(k)
		if err != nil {
			return Result{Err: err}
		}
		h := v.lock().holdOf(cmd.Owner)
		if h == nil {
			return Result{Err: errf(ErrNotOwner, "%q", k)}
		}
		if hl := h.hardLimit(); hl != 0 && t.holdDeadline(h) >= hl {
			return Result{Err: errf(ErrMaxHold, "%q at %d", k, hl)}
		}
		if h.session() == "" && cmd.TTL == 0 && h.TTL == 0 {
			return Result{Err: errf(ErrBadTTL, "no ttl to extend %q by", k)}
		}
	}
	r := Result{Granted: true}
	for i, k := range keys {
		v := t.keys[k]
		h := v.lock().holdOf(cmd.Owner)
		if sid := h.session(); sid != "" {
			if s := t.sessions[sid]; s != nil {
				t.keepAlive(ctx, s, 0)
			}
			h.Deadline = h.hardLimit()
		} else {
			ttl := cmd.TTL
			if ttl == 0 {
				ttl = h.TTL
			}
			h.Deadline = capAt(ctx.now+ttl, h.hardLimit())
			t.scheduleHold(k, v.lock(), h.Deadline)
		}
		if cmd.TTL != 0 {
			h.TTL = cmd.TTL
		}
		h.Extended = ctx.now
		t.touch(ctx, k, v)
		if h.Deadline != 0 {
			ctx.notify(NotifyExpire, k)
		}
		t.foldHold(&r, i, h)
	}
	return r
}

// expireHolds ends the holds on key whose own deadline fell due by ctx.at.
func (t *lockTable) expireHolds(ctx *applyCtx, key string) {
	v := t.keys[key]
	if v == nil || v.Kind() != KindLock {
		if t.goneHoldDue[key] == ctx.at {
			delete(t.goneHoldDue, key)
		}
		return
	}
	l := v.lock()
	if l.holdDue == ctx.at {
		l.holdDue = 0
	} else if t.goneHoldDue[key] == ctx.at {
		delete(t.goneHoldDue, key)
	}
	ended := false
	for i := 0; i < l.numHolders(); {
		if d := l.holder(i).Deadline; d != 0 && (d <= ctx.at || mutant("lease-early") && d <= ctx.at+mutantEarly) {
			t.endHold(ctx, key, l, i, ReasonExpired)
			ended = true
			continue
		}
		i++
	}
	if ended {
		t.settle(ctx, key)
	}
	if v := t.keys[key]; v != nil && v.Kind() == KindLock {
		if next := v.lock().nextDeadline(); next != 0 {
			t.scheduleHold(key, v.lock(), next)
		}
	}
}

// delayEnded clears key's lock-delay once it fell due.
func (t *lockTable) delayEnded(ctx *applyCtx, key string) {
	v := t.keys[key]
	if v == nil || v.Kind() != KindLock {
		return
	}
	if l := v.lock(); l.DelayUntil() != 0 && l.DelayUntil() <= ctx.at {
		l.setDelayUntil(0)
		t.settle(ctx, key)
	}
}

// fenceCheck handles OpFenceCheck: CheckAndAdvance(Key, Token). A token
// above the highest fence ever granted is refused (ErrBadCommand) and
// changes nothing.
func (t *lockTable) fenceCheck(ctx *applyCtx, cmd *Command) Result {
	if err := t.cfg.checkKey(cmd.Key); err != nil {
		return Result{Err: err}
	}
	if cmd.Token > t.maxFence {
		return Result{Err: errf(ErrBadCommand, "token %d is above the highest fence issued, %d", cmd.Token, t.maxFence)}
	}
	cur, ok := t.fences[cmd.Key]
	if cmd.Token < cur {
		return Result{Err: errf(ErrStaleFence, "%d < %d", cmd.Token, cur), Fence: cur}
	}
	if !ok && len(t.fences) >= t.cfg.MaxKeys {
		return Result{Err: errf(ErrLimit, "fence registry full (%d)", t.cfg.MaxKeys)}
	}
	if !ok && t.overMemory() {
		return Result{Err: t.errOOM()}
	}
	if !ok {
		t.mem += fenceBytes(cmd.Key)
	}
	t.fences[cmd.Key] = cmd.Token
	return Result{Granted: true, Fence: cmd.Token}
}
