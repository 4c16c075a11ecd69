package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/internal/oteltrace"
)

// State is where a Lock handle is in its life. It only moves forward:
// Held → Jeopardy → Lost, and any of them → Released by Unlock.
type State int

const (
	// Held: the last renewal succeeded, or the safe deadline is more than
	// TTL/3 away.
	Held State = iota
	// Jeopardy: renewals have been failing and less than TTL/3 is left
	// before the safe deadline. Context() is cancelled on entry. The
	// server has NOT given the lock away yet (it cannot before the safe
	// deadline), so stopping now is stopping in time. Renewal continues;
	// a later success moves the deadline but not the state back.
	// A handle made WithProgressTimeout also enters it when Progress was
	// not called in time; it then stops renewing.
	Jeopardy
	// Lost: the safe deadline passed without a successful renewal, the
	// server said this owner no longer holds the lock, or the session the
	// hold was bound to ended. Lost() is closed on entry.
	Lost
	// Released: Unlock was called.
	Released
)

func (s State) String() string {
	switch s {
	case Held:
		return "held"
	case Jeopardy:
		return "jeopardy"
	case Lost:
		return "lost"
	case Released:
		return "released"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Lock is a held lock with a renewal loop. Create it with Client.Lock or
// Client.TryLock; end it with Unlock.
//
// Honesty first (as Consul says of its locks): a held lock can be lost at
// any time — a partition, a pause of this process, an operator's forced
// release. The handle cannot prevent that; it tells you in time:
//
//   - The safe deadline is S + W + TTL - margin, where S is the local
//     (monotonic) time at which the last successful acquire or extend
//     request was first SENT, W the time the acquire waited in the queue
//     by the cluster's clock (Lease.WaitedMs; the cluster clock never
//     runs ahead of real time, so the grant came at least W after S), and
//     TTL the lease the server granted (Lease.TTLMs, less than asked when
//     a max hold caps it). The lease cannot end before S + W + TTL in the
//     server's time; margin (Config.DriftMargin, default max(10ms,
//     TTL/10)) covers clock-rate difference between this machine and the
//     cluster leader.
//   - Renewal is sent every TTL/3 (from S). If renewals keep failing, the
//     handle enters Jeopardy when less than TTL/3 remains before the safe
//     deadline, and cancels Context(): do your work under Context() and
//     you stop before anyone else can get the lock.
//   - At the safe deadline (or on a "not the owner" answer) it is Lost.
//   - Work that touches a shared resource should still pass Fence() to
//     it (see api.Locker.FenceCheck): the deadline cannot cover a process
//     paused between checking Context() and writing.
type Lock struct {
	c       *leases
	key     string
	owner   string
	ttl     time.Duration
	session *Session
	lease   api.Lease

	ctx    context.Context
	cancel context.CancelCauseFunc
	lost   chan struct{}
	stop   chan struct{} // closed by Unlock: the loop ends
	done   chan struct{} // closed when the loop has ended

	mu        sync.Mutex
	traced    trace.SpanContext // the span that took the lock: renewals link to it (under mu)
	state     State
	safe      time.Time // safe deadline
	lostOnce  sync.Once
	stopOnce  sync.Once
	onRelease func() // set by the coalescer: hand the key to the next local waiter

	progressTimeout time.Duration // 0: no hang protection
	lastProgress    time.Time     // under mu
}

// handles is the part of a Client that hands out Lock handles (Lock,
// TryLock) and coalesces the waits of its goroutines for one key
// (coalesce.go). Handles renew and release through the leases part.
type handles struct {
	*leases

	mu        sync.Mutex
	coalesced map[coalesceKey]*coalescer
}

// Lock blocks until key is held, the wait (WithWait) passes — an error
// wrapping api.ErrWaitTimeout — or ctx ends (api.ErrCancelled; the
// server-side waiter is removed). Concurrent Lock calls of this Client for
// the same key and options share one server-side waiter: see Coalescing
// in the package doc.
func (c *handles) Lock(ctx context.Context, key string, opts ...LockOption) (lk *Lock, rerr error) {
	o := buildOptions(opts)
	ctx, sp := startSpan(ctx, "locknode.Lock", lockAttrs(key, o)...)
	defer func() { sp.endLock(lk, rerr) }()
	if err := c.checkOptions(key, o); err != nil {
		return nil, err
	}
	if o.coalescible() {
		return c.lockCoalesced(ctx, key, o)
	}
	req := o.request(key, &c.cfg)
	ours := req.Owner == ""
	if ours {
		req.Owner = newID()
	}
	lease, sent, err := c.acquire(ctx, req)
	if err != nil {
		if ours {
			c.abandonAcquire(ctx, req, err)
		}
		return nil, err
	}
	return c.newLock(key, req.Owner, o, lease, sent), nil
}

// TryLock takes key if it is free right now, else returns an error
// wrapping api.ErrLocked (or api.ErrLockDelay). It never waits in a queue;
// WithRetry makes it try again a bounded number of times. Cancelling ctx
// ends the retries with an error wrapping api.ErrCancelled and ctx.Err().
func (c *handles) TryLock(ctx context.Context, key string, opts ...LockOption) (lk *Lock, rerr error) {
	o := buildOptions(opts)
	ctx, sp := startSpan(ctx, "locknode.TryLock", lockAttrs(key, o)...)
	defer func() { sp.endLock(lk, rerr) }()
	if err := c.checkOptions(key, o); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		sp.set(oteltrace.AttrAttempts.Int(attempt))
		l, err := c.tryLockOnce(ctx, key, o)
		if err == nil || attempt >= o.tries ||
			!(errors.Is(err, api.ErrLocked) || errors.Is(err, api.ErrLockDelay)) {
			return l, err
		}
		pause := o.retryDelay
		if o.jitter > 0 {
			pause += rand.N(o.jitter)
		}
		c.log.Trace("trylock: held, retrying", "lock", key, "attempt", attempt, "pause", pause)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("client: trylock %s: %w: %w (after %d attempts; last: %w)",
				key, api.ErrCancelled, ctx.Err(), attempt, err)
		case <-t.C:
		}
	}
}

func (c *handles) tryLockOnce(ctx context.Context, key string, o lockOptions) (*Lock, error) {
	req := o.request(key, &c.cfg)
	req.WaitMs = 0
	ours := req.Owner == ""
	if ours {
		req.Owner = newID()
	}
	lease, sent, err := c.tryAcquire(ctx, req)
	if err != nil {
		if ours {
			c.abandonAcquire(ctx, req, err)
		}
		return nil, err
	}
	return c.newLock(key, req.Owner, o, lease, sent), nil
}

func (c *handles) checkOptions(key string, o lockOptions) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", api.ErrBadRequest)
	case o.ttl < time.Millisecond:
		return fmt.Errorf("%w: ttl %v under 1ms", api.ErrBadRequest, o.ttl)
	case c.cfg.margin(o.ttl) >= o.ttl/2:
		return fmt.Errorf("%w: ttl %v too short for drift margin %v", api.ErrBadRequest, o.ttl, c.cfg.margin(o.ttl))
	case o.wait < 0:
		return fmt.Errorf("%w: negative wait", api.ErrBadRequest)
	case o.retrySet && o.tries < 1:
		return fmt.Errorf("%w: retry attempts %d under 1", api.ErrBadRequest, o.tries)
	case o.retryDelay < 0 || o.jitter < 0:
		return fmt.Errorf("%w: negative retry delay %v or jitter %v", api.ErrBadRequest, o.retryDelay, o.jitter)
	case o.progressSet && o.progressTimeout <= 0:
		return fmt.Errorf("%w: progress timeout %v not positive", api.ErrBadRequest, o.progressTimeout)
	}
	return nil
}

// newLock starts the handle of a granted lease whose request was first
// sent at sent.
func (c *handles) newLock(key, owner string, o lockOptions, lease api.Lease, sent time.Time) *Lock {
	ctx, cancel := context.WithCancelCause(context.Background())
	l := &Lock{
		c: c.leases, key: key, owner: owner, ttl: o.ttl, session: o.session, lease: lease,
		ctx: ctx, cancel: cancel, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
		progressTimeout: o.progressTimeout, lastProgress: time.Now(),
	}
	l.safe = l.safeDeadline(sent, lease)
	c.log.Debug("lock held", "lock", key, "fence", lease.Fence, "ttl", o.ttl)
	// A grant answered so late that the hold is already in jeopardy (a
	// long wait for the answer) comes back with its Context done: the
	// caller must not begin work that the renewal loop, scheduled later,
	// would only then stop — by then another holder may have the key.
	if !time.Now().Before(l.safe.Add(-l.granted(lease) / 3)) {
		l.enterJeopardy(l.safe)
	}
	// Ends when Unlock closes l.stop or the lock is lost.
	go l.run(sent)
	return l
}

// safeDeadline is send time + time waited in the queue + granted TTL -
// the margin for that TTL.
func (l *Lock) safeDeadline(sent time.Time, lease api.Lease) time.Time {
	ttl := l.granted(lease)
	waited := time.Duration(max(lease.WaitedMs, 0)) * time.Millisecond
	return sent.Add(waited + ttl - l.c.cfg.margin(ttl))
}

// granted is the lease length the server granted: less than asked when a
// max hold caps it, and the session's remaining time for a hold bound to
// a session. Renewals, jeopardy and the drift margin follow it, not the
// TTL asked for, or a hold granted less would be lost before its first
// renewal.
func (l *Lock) granted(lease api.Lease) time.Duration {
	if lease.TTLMs > 0 && time.Duration(lease.TTLMs)*time.Millisecond < l.ttl {
		return time.Duration(lease.TTLMs) * time.Millisecond
	}
	return l.ttl
}

// Key returns the lock's key.
func (l *Lock) Key() string { return l.key }

// Owner returns the owner token the hold was granted to.
func (l *Lock) Owner() string { return l.owner }

// Fence returns the fencing token of the grant: larger than every token
// granted before it, for any lock. Renewals keep it.
func (l *Lock) Fence() uint64 { return l.lease.Fence }

// Lease returns the server's answer to the acquire.
func (l *Lock) Lease() api.Lease { return l.lease }

// State returns the current state.
func (l *Lock) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}

// SafeDeadline returns the current safe deadline (local monotonic time).
func (l *Lock) SafeDeadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.safe
}

// Context returns a context that is cancelled when the handle leaves
// Held: entering Jeopardy (cause ErrJeopardy, or ErrNoProgress when the
// progress timeout passed), Lost (cause ErrLost, when
// it was lost without a Jeopardy first, e.g. "not the owner") or Released
// (ErrUnlocked). Use context.Cause to tell which.
func (l *Lock) Context() context.Context { return l.ctx }

// Progress tells a handle made WithProgressTimeout that the work is still
// advancing, restarting the progress timeout. Once the timeout has passed
// it has no effect: the handle does not resume renewing. Without
// WithProgressTimeout it does nothing.
func (l *Lock) Progress() {
	l.mu.Lock()
	l.lastProgress = time.Now()
	l.mu.Unlock()
}

// Lost returns a channel closed when the handle enters Lost or Released:
// from then on the caller must assume someone else may hold the lock.
func (l *Lock) Lost() <-chan struct{} { return l.lost }

// Unlock stops renewal and releases the hold. It is safe to call more than
// once (later calls return an error wrapping api.ErrNotHeld) and after the
// lock was lost (the release is still attempted; the server's refusal is
// returned). Call it after a loss too: the next goroutine of a coalesced
// key starts its acquire only once this handle is unlocked, so that two
// goroutines of one process never believe they hold the key at once.
// ctx bounds the release request only.
func (l *Lock) Unlock(ctx context.Context) (rerr error) {
	ctx, sp := startSpan(ctx, "locknode.Unlock", oteltrace.AttrKey.String(l.key), oteltrace.AttrFence.Int64(int64(l.lease.Fence)))
	defer func() { sp.end(rerr) }()
	first := false
	l.stopOnce.Do(func() { first = true; close(l.stop) })
	if !first {
		return fmt.Errorf("%w: %s: already unlocked", api.ErrNotHeld, l.key)
	}
	<-l.done
	_, err := l.c.release(ctx, api.ReleaseRequest{Key: l.key, Owner: l.owner})
	l.mu.Lock()
	l.state = Released
	l.mu.Unlock()
	l.cancel(ErrUnlocked)
	l.lostOnce.Do(func() { close(l.lost) })
	if l.onRelease != nil {
		l.onRelease()
	}
	if err != nil {
		return fmt.Errorf("client: unlock %s: %w", l.key, err)
	}
	return nil
}

type extendResult struct {
	lease api.Lease
	sent  time.Time
	err   error
}

// renewal is the state of a handle's renewal loop, owned by run's
// goroutine.
type renewal struct {
	grant   time.Duration // the lease length last granted
	renewAt time.Time     // when the next extend is due
	// capped: the hold reached its max hold; no renewal can move the
	// safe deadline any more, so the handle only waits for it.
	capped bool
	// stalled: Progress was not called within the progress timeout;
	// no more renewals, the lease runs out.
	stalled    bool
	inflight   chan extendResult // the extend under way; nil: none
	stopExtend context.CancelFunc
}

// loopTimers are the deadlines one turn of run waits for; a nil channel
// is a deadline not armed this turn.
type loopTimers struct {
	renew, jeopardy, progress, lost <-chan time.Time

	stops []func() bool // of every timer armed
}

func (t *loopTimers) stop() {
	for _, s := range t.stops {
		s()
	}
}

// run renews the lease and drives the state machine.
func (l *Lock) run(sent time.Time) {
	defer close(l.done)
	r := &renewal{grant: l.granted(l.lease), stopExtend: func() {}}
	r.renewAt = sent.Add(r.grant / 3)
	defer func() { r.stopExtend() }()
	var sessionDone <-chan struct{}
	if l.session != nil {
		sessionDone = l.session.Done()
	}
	for {
		l.mu.Lock()
		safe, state, lastProgress := l.safe, l.state, l.lastProgress
		l.mu.Unlock()

		t := l.armTimers(r, safe, state, lastProgress)
		select {
		case <-l.stop:
			return
		case <-sessionDone:
			l.lose(fmt.Errorf("%w: %w", ErrLost, ErrSessionEnd))
			return
		case <-t.renew:
			l.startExtend(r, safe)
		case res := <-r.inflight:
			if lost := l.extended(r, res, safe); lost {
				return
			}
		case <-t.jeopardy:
			l.enterJeopardy(safe)
		case <-t.progress:
			l.checkProgress(r, safe)
		case <-t.lost:
			l.expire(r)
			return
		}
		t.stop()
	}
}

// armTimers starts the timers of one turn of run: the next renewal
// (unless one is under way or renewing has ended), the progress timeout,
// the jeopardy point while Held, and the safe deadline.
func (l *Lock) armTimers(r *renewal, safe time.Time, state State, lastProgress time.Time) *loopTimers {
	t := &loopTimers{}
	at := func(when time.Time) <-chan time.Time {
		tm := time.NewTimer(time.Until(when))
		t.stops = append(t.stops, tm.Stop)
		return tm.C
	}
	if r.inflight == nil && !r.capped && !r.stalled {
		t.renew = at(r.renewAt)
	}
	if l.progressTimeout > 0 && !r.stalled {
		t.progress = at(lastProgress.Add(l.progressTimeout))
	}
	if state == Held {
		t.jeopardy = at(safe.Add(-r.grant / 3))
	}
	t.lost = at(safe)
	return t
}

// startExtend sends an extend bounded by the safe deadline; its answer
// arrives on r.inflight.
func (l *Lock) startExtend(r *renewal, safe time.Time) {
	ctx, cancel := context.WithDeadline(context.Background(), safe)
	r.stopExtend = cancel
	ch := make(chan extendResult, 1)
	r.inflight = ch
	// Ends when the request answers or its deadline (the safe
	// deadline) passes, or the loop cancels it on return.
	go func() {
		ctx, sp := linkedSpan(ctx, "locknode.renew", l.spanLink(), oteltrace.AttrKey.String(l.key))
		lease, sent, err := l.c.extend(ctx, api.ExtendRequest{Key: l.key, Owner: l.owner, TTLMs: l.ttl.Milliseconds()})
		sp.endLease(lease, err)
		ch <- extendResult{lease, sent, err}
	}()
}

// extended takes the answer of the extend under way: a success moves
// the safe deadline and schedules the next renewal, a max hold ends
// renewing, a failure is retried soon. It reports whether the answer
// lost the hold (the handle is Lost then).
func (l *Lock) extended(r *renewal, res extendResult, safe time.Time) (lost bool) {
	r.inflight = nil
	r.stopExtend()
	switch {
	case res.err == nil:
		l.mu.Lock()
		if s := l.safeDeadline(res.sent, res.lease); s.After(l.safe) {
			l.safe = s
		}
		l.mu.Unlock()
		l.c.log.Trace("lock renewed", "lock", l.key, "took", time.Since(res.sent))
		r.grant = l.granted(res.lease)
		r.renewAt = res.sent.Add(r.grant / 3)
	case errors.Is(res.err, api.ErrMaxHold):
		// The server will end the hold at its max hold, which the
		// safe deadline already respects (every answer's TTL is
		// capped by it): stop asking.
		l.c.log.Debug("lock at its max hold; not renewing", "lock", l.key, "safe_in", time.Until(safe))
		r.capped = true
	case errors.Is(res.err, api.ErrNotOwner), errors.Is(res.err, api.ErrNotHeld),
		errors.Is(res.err, api.ErrNotFound), errors.Is(res.err, api.ErrSessionExpired):
		l.lose(fmt.Errorf("%w: %w", ErrLost, res.err))
		return true
	default:
		l.c.log.Warn("lock renewal failed", "lock", l.key, "error", res.err, "safe_in", time.Until(safe))
		r.renewAt = time.Now().Add(min(r.grant/20+time.Millisecond, time.Second))
	}
	return false
}

// enterJeopardy moves a Held handle to Jeopardy and cancels Context().
func (l *Lock) enterJeopardy(safe time.Time) {
	l.mu.Lock()
	l.state = Jeopardy
	l.mu.Unlock()
	l.c.log.Warn("lock in jeopardy", "lock", l.key, "fence", l.lease.Fence, "safe_in", time.Until(safe))
	l.cancel(ErrJeopardy)
}

// checkProgress stops renewing, and moves a Held handle to Jeopardy,
// once Progress was not called within the progress timeout.
func (l *Lock) checkProgress(r *renewal, safe time.Time) {
	l.mu.Lock()
	idle := time.Since(l.lastProgress)
	if idle >= l.progressTimeout {
		r.stalled = true
		if l.state == Held {
			l.state = Jeopardy
		}
	}
	l.mu.Unlock()
	if r.stalled {
		// An extend in flight may still land; it only moves the
		// safe deadline, which stays true.
		l.c.log.Warn("lock: no progress, renewal stopped", "lock", l.key, "fence", l.lease.Fence,
			"idle", idle, "safe_in", time.Until(safe))
		l.cancel(ErrNoProgress)
	}
}

// expire loses the handle at its safe deadline.
func (l *Lock) expire(r *renewal) {
	if r.stalled {
		l.lose(fmt.Errorf("%w: %w", ErrLost, ErrNoProgress))
		return
	}
	l.lose(fmt.Errorf("%w: safe deadline passed without renewal", ErrLost))
}

func (l *Lock) lose(cause error) {
	l.mu.Lock()
	l.state = Lost
	l.mu.Unlock()
	l.c.log.Warn("lock lost", "lock", l.key, "fence", l.lease.Fence, "cause", cause)
	l.cancel(cause)
	l.lostOnce.Do(func() { close(l.lost) })
}
