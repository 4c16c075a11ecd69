package fsm

// Bounded expiry. Keys written together with one deadline (a pipeline of
// SET NX PXAT, a fill of locks with one lease) all fall due at the same
// millisecond, and the entry that passes it would end them all: work, and
// events, without bound in one entry, during which the node applies
// nothing else. From cluster version VersionBoundedExpiry on, an entry
// runs due items, in (time, kind, id) order, only until they have emitted
// DueEventBudget events; the rest stay due for the following entries, and
// the leader, whose next deadline is then already past, proposes a Tick
// at once (cluster's tick loop), so a backlog drains within a few commits.
//
// A command applied while a backlog remains must still see only live
// state, as if every due item had run: before it runs, the due work of
// what it touches is done first (lazy expiry on access, as Redis does):
// each key it names (its value's deadline, its holds' deadlines and
// sessions, its lock-delay, its waiters' deadlines and sessions), the
// session it names, its request id. A command whose reach is not known
// from its fields (a script that may touch any key, an op of a later
// version, a write at the key-count or memory limit, which the backlog's
// removals could decide) drains the whole backlog first, as before the
// gate. Reads between entries already treat a due key or hold as gone
// (getAt, liveHolds), so nothing a read answers depends on the backlog.
//
// The budget counts events (and the ends of sessions and tombstones,
// which may emit none), never heap items: a stale heap item (a lease
// extended since) does nothing, so a table restored from a snapshot,
// whose heap holds no stale items, stops at the same item as the
// original.

import "slices"

// VersionBoundedExpiry is the cluster version from which an entry's due
// work is bounded by DueEventBudget.
const VersionBoundedExpiry = 4

// DueEventBudget is the number of events after which an entry stops
// running due items (an expired hold emits two, an expired value one; a
// session or release tombstone that ends counts one more):
// about 2,000 lock expiries, some milliseconds of apply, and of the work
// each event costs the node after apply (watches, subscribers). See
// bench/results/mass-expiry-2026-11-28.md.
const DueEventBudget = 4096

// maxSettleSteps bounds the due items settleKey runs for one key before
// it falls back to draining the backlog (a key cannot hold more due
// things than its holds and waiters; this only guards a bug's loop).
const maxSettleSteps = 1 << 16

// runDue runs the due item (kind, id) as of ctx.at.
func (t *Table) runDue(ctx *applyCtx, kind dueKind, id string) {
	switch kind {
	case dueKey:
		if v := t.keys[id]; v != nil && v.Kind() != KindLock && v.deadline() != 0 && v.deadline() <= ctx.at {
			t.del(ctx, id, ReasonExpired)
			ctx.notify(NotifyExpired, id)
		}
	case dueHold:
		t.expireHolds(ctx, id)
	case dueDelay:
		t.delayEnded(ctx, id)
	case dueWaiter:
		t.expireWaiter(ctx, id)
	case dueSession:
		t.expireSession(ctx, id)
	case dueReqID:
		t.expireReqIDs(ctx)
	case dueTombstone:
		t.expireTombstone(ctx, id)
	case duePump:
		t.pump(ctx, id)
	}
	t.flushFreed(ctx)
}

// expireDue runs the due items with time <= ctx.now, in (time, kind, id)
// order, at the start of each Apply. Before VersionBoundedExpiry it runs
// them all, so every command sees only live state; from it on, it stops
// once the entry has emitted DueEventBudget events and sets ctx.backlog
// when due items are left (settleFor then does the command's share).
func (t *Table) expireDue(ctx *applyCtx) {
	t.runDueItems(ctx, t.gate(VersionBoundedExpiry))
}

// drainDue runs every due item left, without bound: the behaviour before
// VersionBoundedExpiry, for a command whose reach is not known.
func (t *Table) drainDue(ctx *applyCtx) {
	t.runDueItems(ctx, false)
	ctx.backlog = false
}

// runDueItems runs the due items in order until none is due or, when
// bounded, the entry's budget is spent (then ctx.backlog is set).
//
// The budget counts only the events every replica emits alike: keyspace
// notifications are per node (SetKeyspaceEvents), and counting them would
// stop a node that emits them at an earlier due item than the others, so
// their tables would part.
func (t *Table) runDueItems(ctx *applyCtx, bounded bool) {
	used := replicatedEvents(ctx.events)
	for {
		kind, it, ok := t.due.next()
		if !ok || it.at > ctx.now {
			break
		}
		if bounded && used+ctx.dueQuiet >= DueEventBudget {
			ctx.backlog = true
			break
		}
		t.due[kind-1].pop()
		ctx.at = it.at
		n := len(ctx.events)
		t.runDue(ctx, kind, it.id)
		used += replicatedEvents(ctx.events[n:])
	}
	ctx.at = ctx.now
}

// replicatedEvents counts the events of evs that do not depend on the
// node's own settings (all but EvKeyspace).
func replicatedEvents(evs []Event) int {
	n := 0
	for i := range evs {
		if evs[i].Kind != EvKeyspace {
			n++
		}
	}
	return n
}

// HasDueBacklog reports whether due work is left that an entry's budget
// put off: some due item's time is not after the table's time. The
// leader's next Tick is then due at once. (A stale heap item may also
// make it true; the Tick for it is harmless.)
func (t *Table) HasDueBacklog() bool {
	at, ok := t.NextDeadline()
	return ok && at <= t.now
}

// settler is the part of the table that, during an expiry backlog, does
// the due work a command touches before the command runs (settleFor and
// what it calls). It reaches the rest of the table through t.
type settler struct{ *Table }

// settleFor does, while a backlog remains, the due work of everything
// cmd (with its decoded renewals) touches, or drains the whole backlog
// when that is not known.
func (t settler) settleFor(ctx *applyCtx, cmd *Command, renewals []Command) {
	if !ctx.backlog {
		return
	}
	keys, known := t.reach(cmd)
	for i := range renewals {
		if !known {
			break
		}
		var k []string
		k, known = t.reach(&renewals[i])
		keys = append(keys, k...)
	}
	// A refusal for the key-count or memory limit depends on everything
	// the backlog would remove: near them, decide as after a full drain.
	if !known || t.overMemory() || len(t.keys)+len(keys) >= t.cfg.MaxKeys {
		t.drainDue(ctx)
		return
	}
	t.settleReqID(ctx, cmd.ReqID)
	for i := range renewals {
		t.settleReqID(ctx, renewals[i].ReqID)
	}
	if cmd.Session != "" {
		t.settleSession(ctx, cmd.Session)
	}
	for i := range renewals {
		if s := renewals[i].Session; s != "" {
			t.settleSession(ctx, s)
		}
	}
	for _, k := range keys {
		if !t.settleKey(ctx, k) {
			t.drainDue(ctx)
			return
		}
	}
	ctx.at = ctx.now
}

// reach returns the keys cmd can read or change; known is false when
// cmd may reach further than its fields say.
func (t settler) reach(cmd *Command) (keys []string, known bool) {
	switch cmd.Op {
	case OpTick, OpScriptLoad, OpScriptFlush, OpFenceCheck, OpSessionOpen:
		return nil, true
	case OpAcquire, OpRelease, OpExtend, OpReown:
		if len(cmd.Keys) > 0 {
			return cmd.Keys, true
		}
		return []string{cmd.Key}, true
	case OpCancelWait:
		if w := t.waiters[cmd.ReqID]; w != nil {
			return w.Keys, true
		}
		return nil, true
	case OpSessionKeepAlive, OpSessionClose:
		// settleFor settles the session and the keys of its holds.
		return nil, true
	case OpRedis:
		return redisReach(cmd.Args)
	case OpEval, OpEvalSHA:
		// A script of a known lock library touches only its KEYS; any
		// other may reach keys it did not declare unless KeysOnly.
		if !cmd.KeysOnly && !t.hotScript(cmd) {
			return nil, false
		}
		for _, k := range cmd.KeysB {
			keys = append(keys, string(k))
		}
		return keys, true
	case OpExec:
		for _, w := range cmd.Watch {
			keys = append(keys, w.Key)
		}
		for _, args := range cmd.Multi {
			k, ok := redisReach(args)
			if !ok {
				return nil, false
			}
			keys = append(keys, k...)
		}
		return keys, true
	case OpBatchRenew:
		// Its renewals are settled one by one (settleFor).
		return nil, true
	}
	return nil, false
}

// redisReach returns the keys of the Redis command args by the
// catalogue; a command the table does not run itself (a script inside a
// MULTI block among them) is not known.
func redisReach(args [][]byte) (keys []string, known bool) {
	if len(args) == 0 {
		return nil, true
	}
	name := lowerName(args[0])
	switch name {
	case "ping", "time", "publish":
		return nil, true
	}
	c := lookupCmd(args[0])
	if c == nil {
		// Refused, or a script inside a MULTI block (execScript).
		return nil, false
	}
	if !arityOK(c, len(args)) {
		return nil, true // refused before it touches anything
	}
	ks := CommandKeysOf(name, args)
	if ks == nil {
		return nil, false
	}
	for _, k := range ks {
		keys = append(keys, string(k))
	}
	return keys, true
}

// hotScript reports whether cmd runs a script of a known lock library,
// which touches nothing but its KEYS (without changing the cache's order).
func (t settler) hotScript(cmd *Command) bool {
	script := cmd.Script
	if cmd.Op == OpEvalSHA {
		var ok bool
		if script, ok = t.cache.get(lowerName([]byte(cmd.Key))); !ok {
			return true // NOSCRIPT: touches nothing
		}
	}
	return classify(script) != famNone
}

// settleReqID forgets, before the command looks it up, the remembered
// request ids that expired (they are kept in expiry order).
func (t settler) settleReqID(ctx *applyCtx, id string) {
	if id == "" {
		return
	}
	if e := t.reqs.get(id); e == nil || e.expires > ctx.now {
		return
	}
	for x := &t.reqs; x.due != 0 && x.due <= ctx.now; {
		ctx.at = x.due
		t.expireReqIDs(ctx)
	}
	ctx.at = ctx.now
}

// settleSession ends session id if it fell due, else settles the keys of
// its holds and waiters (a keep-alive moves the holds' deadlines, so one
// that ended by its own lease must end first; a close hands the keys on).
func (t settler) settleSession(ctx *applyCtx, id string) {
	s := t.sessions[id]
	if s == nil {
		return
	}
	if s.Deadline <= ctx.now {
		ctx.at = s.Deadline
		t.expireSession(ctx, id)
		t.flushFreed(ctx)
		ctx.at = ctx.now
		return
	}
	// The keys of its holds and of its waiters: closing it frees the
	// ones and unqueues the others, which hands their keys on.
	var keys []string
	for r := range t.sessHolds[id] {
		keys = append(keys, r.key)
	}
	for wid := range t.sessWaiters[id] {
		if w := t.waiters[wid]; w != nil {
			keys = append(keys, w.Keys...)
		}
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 && keys[i-1] == k {
			continue
		}
		t.settleKey(ctx, k)
	}
}

// settleKey runs the due work of key — its value's deadline, its holds'
// own deadlines and sessions, its lock-delay, its waiters' deadlines and
// sessions — in (time, kind, id) order, each as of its own time, as
// expireDue would. It reports false if it gave up (maxSettleSteps).
func (t settler) settleKey(ctx *applyCtx, key string) bool {
	for range maxSettleSteps {
		kind, id, at, ok := t.keyDue(key, ctx.now)
		if !ok {
			ctx.at = ctx.now
			return true
		}
		ctx.at = at
		t.runDue(ctx, kind, id)
	}
	ctx.at = ctx.now
	return false
}

// keyDue returns the first due thing of key at now in (time, kind, id)
// order.
func (t settler) keyDue(key string, now int64) (kind dueKind, id string, at int64, ok bool) {
	consider := func(k dueKind, i string, a int64) {
		if a == 0 || a > now {
			return
		}
		if !ok || a < at || a == at && (k < kind || k == kind && i < id) {
			kind, id, at, ok = k, i, a, true
		}
	}
	session := func(sid string) {
		if s := t.sessions[sid]; s != nil {
			consider(dueSession, sid, s.Deadline)
		}
	}
	if v := t.keys[key]; v != nil {
		if v.Kind() != KindLock {
			consider(dueKey, key, v.deadline())
		} else {
			l := v.lock()
			for i := 0; i < l.numHolders(); i++ {
				h := l.holder(i)
				consider(dueHold, key, h.Deadline)
				if sid := h.session(); sid != "" {
					session(sid)
				}
			}
			consider(dueDelay, key, l.DelayUntil())
		}
	}
	for _, w := range t.queues[key] {
		consider(dueWaiter, w.ID, w.Deadline)
		if w.Session != "" {
			session(w.Session)
		}
	}
	return kind, id, at, ok
}
