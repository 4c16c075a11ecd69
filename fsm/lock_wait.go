package fsm

import "slices"

// Waiting: FIFO queues per key, hand-off from the head, cancel and
// timeout.

// waitQueue is the acquires of a Table that wait: a FIFO queue per key and
// the waiters by id. It hands a key to the head of its queue through the
// lock ops' grants.
type waitQueue struct {
	*keySpace
	*sessionTable
	locks *lockTable

	queues  map[string][]*Waiter // per-key FIFO, survives the value (waiting on a foreign value)
	waiters map[string]*Waiter
}

// reset empties the queues.
func (t *waitQueue) reset() {
	t.queues = make(map[string][]*Waiter)
	t.waiters = make(map[string]*Waiter)
}

// enqueue places w at the tail of each of its keys' queues, all in this
// entry, so every queue orders waiters by the same log order: two
// multi-lock waiters can never wait for each other in a cycle.
func (t *waitQueue) enqueue(w *Waiter) {
	for _, k := range w.Keys {
		if len(t.queues[k]) == 0 {
			t.mem += queueBytes(k)
		}
		t.queues[k] = append(t.queues[k], w)
	}
	t.waiters[w.ID] = w
	t.mem += waiterBytes(w)
	if w.Session != "" {
		t.sessAddWaiter(w.Session, w.ID)
	}
	t.schedule(w.Deadline, dueWaiter, w.ID)
}

// unqueue removes w from its queues and the waiter index.
func (t *waitQueue) unqueue(w *Waiter) {
	for _, k := range w.Keys {
		q := t.queues[k]
		for i, x := range q {
			if x == w {
				if i == 0 {
					q = q[1:]
				} else {
					q = append(q[:i:i], q[i+1:]...)
				}
				break
			}
		}
		if len(q) == 0 {
			delete(t.queues, k)
			t.mem -= queueBytes(k)
		} else {
			t.queues[k] = q
		}
	}
	delete(t.waiters, w.ID)
	t.mem -= waiterBytes(w)
	if w.Session != "" {
		t.sessDelWaiter(w.Session, w.ID)
	}
}

// waiterFits: w is at the head of every one of its queues and every key
// is free for it.
func (t *waitQueue) waiterFits(w *Waiter) bool {
	for _, k := range w.Keys {
		if q := t.queues[k]; len(q) == 0 || q[0] != w {
			return false
		}
		if t.locks.keyBlock(k, t.keys[k], w) != nil {
			return false
		}
	}
	return true
}

// pump grants key's queue from the head, as many waiters as fit, in order,
// stopping at the first that does not. A granted multi-lock waiter leaves
// the other queues too, so those keys are pumped next.
func (t *waitQueue) pump(ctx *applyCtx, key string) {
	var buf [4]string
	work := append(buf[:0], key)
	for len(work) > 0 {
		k := work[0]
		work = work[1:]
		for {
			q := t.queues[k]
			if len(q) == 0 || !t.waiterFits(q[0]) {
				break
			}
			w := q[0]
			if mutant("grant-newest-first") && len(q) > 1 {
				if n := q[len(q)-1]; len(n.Keys) == 1 && t.locks.keyBlock(k, t.keys[k], n) == nil {
					w = n
				}
			}
			if t.lostFreshKey(ctx, w) {
				// A hold granted in this entry on one of w's keys has
				// ended in it already: w would be fenced with the same
				// index. The next entry grants it (a Tick is due at once).
				t.schedule(ctx.now+1, duePump, k)
				break
			}
			if s := t.sessions[w.Session]; w.Session != "" && s != nil && s.Deadline <= ctx.now && !mutant("grant-dying-session") {
				// Its session falls due in this same entry (expireDue
				// reaches it later): granted now, the hold would end
				// before anyone could use it, and the next waiter would
				// be granted in this entry too, with the same fence. The
				// wait ends as the session's end would end it.
				t.waiterEnded(ctx, w, ErrSessionUnknown, false)
			} else {
				t.grantWaiter(ctx, w)
			}
			for _, k2 := range w.Keys {
				if k2 != k {
					work = append(work, k2)
				}
			}
		}
	}
}

// lostFreshKey reports whether a hold granted in this entry on one of w's
// keys has ended in this entry (applyCtx.lostFresh).
func (t *waitQueue) lostFreshKey(ctx *applyCtx, w *Waiter) bool {
	for _, k := range w.Keys {
		if slices.Contains(ctx.lostFresh, k) {
			return true
		}
	}
	return false
}

// grantWaiter turns queued w into holds and tells the node (EvGranted).
func (t *waitQueue) grantWaiter(ctx *applyCtx, w *Waiter) {
	t.unqueue(w)
	r := t.locks.grantAll(ctx, w, w.Keys)
	ctx.emit(Event{Kind: EvGranted, WaiterID: w.ID, Keys: w.Keys, Owner: w.Owner,
		Fence: r.Fence, Deadline: r.Deadline, Count: r.Count, Now: ctx.now})
	t.reqWaiterGranted(w.ID, r)
}

// waiterEnded removes w without the lock, tells the node (EvWaitEnded) and
// offers its keys to the waiters behind it.
func (t *waitQueue) waiterEnded(ctx *applyCtx, w *Waiter, err error, pump bool) {
	t.unqueue(w)
	ctx.emit(Event{Kind: EvWaitEnded, WaiterID: w.ID, Keys: w.Keys, Owner: w.Owner, Err: err})
	t.reqWaiterEnded(w.ID, err)
	if pump {
		for _, k := range w.Keys {
			t.pump(ctx, k)
		}
	}
}

// keyFreed is called by del after it removed key's value. The waiters are
// offered the key once the current step is over (flushFreed).
func (t *waitQueue) keyFreed(ctx *applyCtx, key string) {
	if len(t.queues[key]) > 0 {
		ctx.freed = append(ctx.freed, key)
	}
}

// flushFreed offers every key freed by del during the last step to its
// waiters, unless the step put a new value there.
func (t *waitQueue) flushFreed(ctx *applyCtx) {
	for i := 0; i < len(ctx.freed); i++ {
		if k := ctx.freed[i]; t.keys[k] == nil {
			t.pump(ctx, k)
		}
	}
	ctx.freed = ctx.freed[:0]
}

// cancelWait handles OpCancelWait. It is answered from state, not from the
// exactly-once cache (its ReqID names the waiter): Queued = the waiter was
// still queued and is now gone; Granted (with its fence) = it had been
// granted, so the caller must release; neither = unknown or gone.
func (t *waitQueue) cancelWait(ctx *applyCtx, cmd *Command) Result {
	if cmd.ReqID == "" {
		return Result{Err: errf(ErrBadCommand, "cancel needs the waiter's request id")}
	}
	if w := t.waiters[cmd.ReqID]; w != nil {
		if cmd.Owner != "" && cmd.Owner != w.Owner {
			return Result{Err: errf(ErrNotOwner, "waiter %q", cmd.ReqID)}
		}
		t.waiterEnded(ctx, w, ErrCancelled, true)
		return Result{Queued: true}
	}
	if e := t.reqs.get(cmd.ReqID); e != nil && e.op == OpAcquire && e.flags&reqGranted != 0 {
		return Result{Granted: true, Fence: e.fence, Deadline: e.deadline, Count: int(e.count)}
	}
	return Result{}
}

// expireWaiter ends waiter id's wait once it fell due (ErrWaitTimeout).
func (t *waitQueue) expireWaiter(ctx *applyCtx, id string) {
	if w := t.waiters[id]; w != nil && w.Deadline <= ctx.at {
		t.waiterEnded(ctx, w, ErrWaitTimeout, true)
	}
}
