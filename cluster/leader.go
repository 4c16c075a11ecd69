package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/locknode/locknode/fsm"
)

// leadership is one term of this node as leader. ready closes once the
// term's clock is set (after a barrier: every earlier entry is applied);
// done closes when the term ends.
type leadership struct {
	ctx    context.Context // cancelled when the term ends
	cancel context.CancelFunc
	ready  chan struct{}
	done   chan struct{}
	// began is when raft made this node leader (real time, monotonic):
	// replication contacts before it are of an earlier term (contact.go).
	began time.Time

	// Set before ready is closed, read only after.
	t0 int64     // cluster clock (FSM ms) when the term's clock was set
	m0 time.Time // this node's monotonic reading at that moment

	// handoff holds back queued acquires until the release that hands
	// the lock on is proposed (see deferQueuedAcquire).
	handoff handoffGate
}

// handoffGate lets blocking acquires of a busy lock wait, per key, for
// the next release of that key to be proposed on this leader, so that
// both share one log write. Without it the previous holder's re-queue
// (its next acquire) and the new holder's release race to the leader:
// whichever comes first is written alone and the other waits for that
// write, on the leader and again on the follower, which adds most of a
// commit to every contended hand-off.
type handoffGate struct {
	mu       sync.Mutex
	keys     map[string]*handoffWait
	maxDefer time.Duration // 0: handoffMaxDefer (tests raise it)
}

// handoffWait is one key's held-back acquires: ch closes when they may go.
type handoffWait struct {
	ch chan struct{}
	n  int // acquires between wait and leave
}

// wait returns a channel that closes at the next open of key, and how
// long to wait for it at most. Every wait is followed by a leave.
func (g *handoffGate) wait(key string) (<-chan struct{}, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.keys == nil {
		g.keys = make(map[string]*handoffWait)
	}
	w, ok := g.keys[key]
	if !ok {
		w = &handoffWait{ch: make(chan struct{})}
		g.keys[key] = w
	}
	w.n++
	d := g.maxDefer
	if d == 0 {
		d = handoffMaxDefer
	}
	return w.ch, d
}

// leave ends a wait on key that returned ch, so that keys nobody waits
// for are not kept.
func (g *handoffGate) leave(key string, ch <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if w, ok := g.keys[key]; ok && w.ch == ch {
		if w.n--; w.n == 0 {
			delete(g.keys, key)
		}
	}
}

// waiting reports how many acquires wait on key.
func (g *handoffGate) waiting(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if w, ok := g.keys[key]; ok {
		return w.n
	}
	return 0
}

// open releases every acquire held back on key.
func (g *handoffGate) open(key string) {
	g.mu.Lock()
	if w, ok := g.keys[key]; ok {
		close(w.ch)
		delete(g.keys, key)
	}
	g.mu.Unlock()
}

// openFreed releases the acquires held back on keys an applied entry
// left free: a hold that ended (release, expiry, Redis DEL, script)
// without granting a waiter, so a held-back acquire is granted at once
// instead of after handoffMaxDefer. A hand-off to a queued waiter opens
// nothing here: opening then would send the held-back acquires off just
// as the new holder sends its release, the race the gate is for. A
// release through the lock API opens the key when it is proposed
// (openHandoff); one by a Redis DEL or script that hands the lock on
// leaves the held-back acquires to handoffMaxDefer.
//
// One entry may carry a great many events (a Tick that expires a whole
// fill of keys, a FLUSHALL), and this runs on the leader's apply path:
// it costs one pass over them, and nothing while no acquire is held back.
func (g *handoffGate) openFreed(events []fsm.Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.keys) == 0 {
		return
	}
	var granted map[string]bool // built at the first freed key with waiters
	for _, e := range events {
		if e.Kind != fsm.EvReleased {
			continue
		}
		w, ok := g.keys[e.Key]
		if !ok {
			continue
		}
		if granted == nil {
			granted = grantedKeys(events)
		}
		if !granted[e.Key] {
			close(w.ch)
			delete(g.keys, e.Key)
		}
	}
}

// grantedKeys is the set of keys events grant.
func grantedKeys(events []fsm.Event) map[string]bool {
	m := map[string]bool{}
	for _, o := range events {
		if o.Kind != fsm.EvGranted {
			continue
		}
		m[o.Key] = true
		for _, k := range o.Keys {
			m[k] = true
		}
	}
	return m
}

// now is the cluster clock as this leader stamps it: t0 plus the
// monotonic time elapsed since. Only the rate of this node's monotonic
// clock matters, never its wall-clock offset (DESIGN.md "Time").
func (l *leadership) now(c Clock) int64 {
	return l.t0 + c.Now().Sub(l.m0).Milliseconds()
}

// leadershipLoop follows raft's leadership notifications. It ends when
// the node closes.
func (n *leaderTerm) leadershipLoop(notify <-chan bool) {
	var cur *leadership
	end := func() {
		if cur != nil {
			cur.cancel()
			close(cur.done)
			n.lead.Store(nil)
			cur = nil
		}
	}
	for {
		select {
		case isLeader := <-notify:
			if isLeader && cur == nil {
				ctx, cancel := context.WithCancel(context.Background())
				cur = &leadership{ctx: ctx, cancel: cancel, ready: make(chan struct{}), done: make(chan struct{}), began: time.Now()}
				n.lead.Store(cur)
				n.log.Info("became leader", "term", n.raft.CurrentTerm())
				l := cur
				n.wg.Add(1)
				// Ends when the term ends (l.done) or the node closes.
				go func() {
					defer n.wg.Done()
					n.leadTerm(l)
				}()
			} else if !isLeader {
				if cur != nil {
					n.log.Info("lost leadership")
				}
				end()
			}
			n.metrics.setLeader(cur != nil)
			n.broadcastLeader()
		case <-n.closed:
			end()
			return
		}
	}
}

// leadTerm sets the term's clock and then runs the tick loop.
func (n *leaderTerm) leadTerm(l *leadership) {
	// The barrier makes every entry of earlier terms applied, so the
	// table's clock is the largest time any committed command carries.
	for {
		err := n.await(n.raft.Barrier(0))
		if err == nil {
			break
		}
		n.log.Warn("leader barrier failed", "error", err)
		select {
		case <-l.done:
			return
		case <-n.closed:
			return
		case <-time.After(n.cfg.MinTickGap):
		}
	}
	n.mu.RLock()
	t0 := n.table.Now()
	n.mu.RUnlock()
	m0 := n.clock.Now()
	if t0 == 0 {
		// A fresh cluster: seed the cluster clock from the wall clock so
		// FSM times read like Unix milliseconds. This is the only time a
		// wall clock is read.
		t0 = m0.UnixMilli()
	} else if f := n.clockFloor(m0); f > t0 {
		// The time this node has seen pass since it applied the log's
		// latest time: without it, leases would end late by the whole
		// idle time before the election.
		t0 = f
	}
	l.t0, l.m0 = t0, m0
	// Called on the apply path until the term's tick loop returns.
	unsub := n.Subscribe(func(_ uint64, events []fsm.Event) { l.handoff.openFreed(events) })
	defer unsub()
	close(l.ready)
	n.log.Info("leader clock set", "t0", t0)
	if !n.cfg.ManualUpgrade {
		n.wg.Add(1)
		// Ends with the term, the node, or once nothing is left to
		// activate (autoUpgradeLoop).
		go func() {
			defer n.wg.Done()
			n.autoUpgradeLoop(l)
		}()
	}
	n.broadcastLeader()
	n.tickLoop(l)
}

// idleTickWait is how long the tick loop sleeps when neither the table
// nor the clock sync (disabled) has a deadline: only an applied batch,
// which kicks it, can bring one, so this is a backstop, not a poll.
const idleTickWait = time.Minute

// tickLoop proposes a Tick whenever something in the table falls due, so
// expiries and hand-offs happen without client traffic, and when the
// log's time has fallen ClockSyncInterval behind (clockFloor). It wakes
// at the next deadline (at most TickInterval away while the table has
// one; the clock sync's own deadline when it has none) and after every
// applied batch, and never proposes two Ticks less than MinTickGap apart;
// the term's first Tick goes as soon as it is due. Due work an entry left
// for later (fsm.DueEventBudget) keeps the next deadline in the past, so
// a mass expiry drains in Ticks proposed one after another.
func (n *leaderTerm) tickLoop(l *leadership) {
	timer := time.NewTimer(n.cfg.TickInterval)
	defer timer.Stop()
	var lastTick time.Time
	sync := n.cfg.ClockSyncInterval.Milliseconds()
	for {
		n.mu.RLock()
		at, ok := n.table.NextDeadline()
		logged := n.table.Now()
		n.mu.RUnlock()
		// With nothing in the table due, only the clock sync (or an
		// applied batch, which kicks) can need a Tick: the loop sleeps
		// until then rather than waking every TickInterval to find
		// nothing, the largest share of an idle leader's wake-ups after
		// raft's. A table deadline keeps the TickInterval bound, which
		// also bounds how late an expiry is under a Clock that runs at
		// another rate than the timers.
		tableDue := ok
		if sync > 0 && (!ok || logged+sync < at) {
			// An idle log: the next sync is due like a deadline.
			at, ok = logged+sync, true
		}
		wait := n.cfg.TickInterval
		if !ok {
			wait = idleTickWait
		} else {
			now := l.now(n.clock)
			if at <= now {
				since := n.clock.Now().Sub(lastTick)
				if lastTick.IsZero() || since >= n.cfg.MinTickGap {
					lastTick = n.clock.Now()
					if _, _, err := n.applyAsLeader(l.ctx, l, &fsm.Command{Op: fsm.OpTick}); err != nil {
						n.log.Debug("tick failed", "error", err)
					} else {
						n.metrics.ticks.Inc()
					}
					continue
				}
				wait = n.cfg.MinTickGap - since
			} else if d := time.Duration(at-now) * time.Millisecond; d < wait || !tableDue {
				wait = d
			}
		}
		if !lastTick.IsZero() {
			// Never closer than MinTickGap to the last Tick. Before the
			// first, a deadline a millisecond away is waited for as it is:
			// rounding it up to MinTickGap could leave it for a whole gap.
			wait = max(wait, n.cfg.MinTickGap-n.clock.Now().Sub(lastTick))
		}
		wait = max(wait, time.Millisecond)
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-n.kick:
			// Go >= 1.23 timers: Reset after Stop never sees a stale tick.
			timer.Stop()
		case <-l.done:
			return
		case <-n.closed:
			return
		}
	}
}

// handoffMaxDefer bounds how long deferQueuedAcquire holds an acquire
// back: several commits, so that a hand-off slowed by a loaded machine
// still finds it waiting, while a lock held for longer costs its new
// waiters at most this much of their place in the queue (never their
// grant: the lock is held meanwhile, and a lock left free lets them go).
const handoffMaxDefer = 10 * time.Millisecond

// deferQueuedAcquire holds back a blocking exclusive acquire that this
// leader's table says will queue behind another owner, until the next
// release of that key is proposed here (or the key is left free, or
// handoffMaxDefer passes), so both enter one log write.
//
// Under contention every hand-off commits the holder's release, and the
// previous holder's next acquire arrives at the same moment (both are
// answered by one applied batch). Sent on its own, that acquire takes a
// leader write and a follower write of its own, and the release waits
// behind one or both: measured on the 16-worker hand-off benchmark, only
// a fifth of the releases shared a batch with it, and hand-offs that
// waited behind it took 1.7 times as long. Holding the acquire back costs
// it nothing: it would have queued behind the holder anyway, and the
// release it joins is what moves the queue.
func (n *leaderTerm) deferQueuedAcquire(ctx context.Context, cmd *fsm.Command) {
	if cmd.Wait == 0 || cmd.Key == "" || len(cmd.Keys) > 0 || cmd.Mode != fsm.Exclusive {
		return
	}
	l := n.readyLead()
	if l == nil {
		return
	}
	// Wait first, then look: a release proposed after the look opens
	// this channel, so none is missed in between.
	open, maxDefer := l.handoff.wait(cmd.Key)
	defer l.handoff.leave(cmd.Key, open)
	n.mu.RLock()
	busy := n.table.HeldByOther(cmd.Key, cmd.Owner, n.table.Now())
	n.mu.RUnlock()
	if !busy {
		return
	}
	// Never more than a small part of the caller's own wait, which the
	// FSM counts from when the acquire is proposed.
	t := time.NewTimer(min(maxDefer, time.Duration(cmd.Wait)*time.Millisecond/8))
	defer t.Stop()
	select {
	case <-open:
	case <-t.C:
	case <-ctx.Done():
	case <-l.done:
	case <-n.closed:
	}
}

// openHandoff lets the acquires held back on cmd's keys go with the
// release cmd that is about to be proposed.
func (n *leaderTerm) openHandoff(cmd *fsm.Command) {
	l := n.lead.Load()
	if l == nil {
		return
	}
	if cmd.Key != "" {
		l.handoff.open(cmd.Key)
	}
	for _, k := range cmd.Keys {
		l.handoff.open(k)
	}
}

// readyLead returns this node's leadership once its term is ready to
// propose (l.ready), or nil: a follower, or a leader still applying its
// term's barrier.
func (n *leaderTerm) readyLead() *leadership {
	l := n.lead.Load()
	if l == nil {
		return nil
	}
	select {
	case <-l.ready:
		return l
	default:
		return nil
	}
}
