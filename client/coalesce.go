package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/locknode/locknode/api"
)

// Coalescing: goroutines of one Client that Lock the same key with the
// same options queue locally, in FIFO order, behind ONE server-side
// waiter. When that waiter is granted, the hold goes to the first local
// goroutine still waiting. When it unlocks, the hold goes back to the
// server (release) and the next local goroutine's acquire is queued —
// only then, so waiters of other processes that queued meanwhile go
// first (the server's FIFO stays fair across processes).
//
// Every local hold is its own server grant: its own random owner token
// and its own fence. A hand-off therefore costs the same two requests
// (release, acquire) as without coalescing; what coalescing saves is N-1
// long polls and queued waiters per key on the server. We chose this
// over passing one server hold between goroutines because sharing the
// hold would share its owner token (a late Unlock or renewal of a
// previous goroutine would act on the next one's hold) and its fence (a
// delayed write of a previous goroutine would pass the fence check of the
// resource). With a fresh grant, fencing keeps its full meaning.

type coalesceKey struct {
	key       string
	ttl       time.Duration
	session   string
	lockDelay time.Duration
	maxHold   time.Duration
	// progress: each handle gets the timeout it asked for, so calls
	// that differ in it do not share a waiter.
	progress time.Duration
	// meta: each hold carries the metadata its caller asked for.
	meta string
}

type coalescer struct {
	k    coalesceKey
	opts lockOptions // the first caller's; equal in every field the key holds

	// Guarded by handles.mu.
	queue    []*localWaiter
	holding  bool // a local goroutine holds the server lock
	fetchGen int  // generation of the running fetch; 0: none
	gens     int  // generations handed out
	stop     context.CancelFunc
}

type localWaiter struct {
	got chan *Lock // buffered: delivery never blocks
	err chan error // buffered
	// span is the caller's recording span, or nil: the server acquire
	// started for this waiter runs under it (trace.go).
	span trace.Span
}

func (c *handles) lockCoalesced(ctx context.Context, key string, o lockOptions) (*Lock, error) {
	k := coalesceKey{key: key, ttl: o.ttl, lockDelay: o.lockDelay, maxHold: o.maxHold, progress: o.progressTimeout,
		meta: o.metaKey()}
	if o.session != nil {
		k.session = o.session.ID()
	}
	w := &localWaiter{got: make(chan *Lock, 1), err: make(chan error, 1), span: recordingSpan(ctx)}
	c.mu.Lock()
	co := c.coalesced[k]
	if co == nil {
		co = &coalescer{k: k, opts: o}
		c.coalesced[k] = co
	}
	co.queue = append(co.queue, w)
	c.kickLocked(co)
	c.mu.Unlock()

	wctx, cancel := ctx, context.CancelFunc(func() {})
	if o.wait > 0 {
		wctx, cancel = context.WithTimeout(ctx, o.wait)
	}
	defer cancel()
	select {
	case l := <-w.got:
		return l, nil
	case err := <-w.err:
		return nil, err
	case <-wctx.Done():
	}
	c.mu.Lock()
	select {
	case l := <-w.got: // granted as we gave up: take it, the caller asked for it
		c.mu.Unlock()
		return l, nil
	case err := <-w.err:
		c.mu.Unlock()
		return nil, err
	default:
	}
	for i, x := range co.queue {
		if x == w {
			co.queue = append(co.queue[:i], co.queue[i+1:]...)
			break
		}
	}
	c.settleLocked(co)
	c.mu.Unlock()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%w: lock %s: %w", api.ErrCancelled, key, ctx.Err())
	}
	return nil, fmt.Errorf("%w: lock %s after %v", api.ErrWaitTimeout, key, o.wait)
}

// kickLocked starts a server acquire if local goroutines wait and none is
// running or held. c.mu held.
func (c *handles) kickLocked(co *coalescer) {
	if len(co.queue) == 0 || co.holding || co.fetchGen != 0 {
		return
	}
	co.gens++
	gen := co.gens
	ctx, cancel := context.WithCancel(withSpan(context.Background(), co.queue[0].span))
	co.fetchGen, co.stop = gen, cancel
	// Ends when the server answers or settleLocked cancels ctx (the local
	// queue emptied).
	go c.fetch(ctx, co, gen)
}

// settleLocked stops a now useless fetch and forgets an idle coalescer.
// c.mu held.
func (c *handles) settleLocked(co *coalescer) {
	if len(co.queue) > 0 {
		return
	}
	if co.fetchGen != 0 {
		co.stop()
		co.fetchGen, co.stop = 0, nil
	}
	if !co.holding && c.coalesced[co.k] == co {
		delete(c.coalesced, co.k)
	}
}

// fetch acquires the key on the server for whichever local goroutine is
// first in line when the grant arrives.
func (c *handles) fetch(ctx context.Context, co *coalescer, gen int) {
	req := co.opts.request(co.k.key, &c.cfg)
	req.Owner = newID()
	req.WaitMs = 0 // until ctx: local waiters keep their own deadlines
	lease, sent, err := c.acquire(ctx, req)
	if err != nil {
		c.abandonAcquire(ctx, req, err)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	current := co.fetchGen == gen && ctx.Err() == nil
	if current {
		co.stop() // release the context's resources; the request is over
		co.fetchGen, co.stop = 0, nil
	}
	if err != nil {
		if current {
			// Every local waiter asked with the same options: the same
			// answer applies to all of them.
			for _, w := range co.queue {
				w.err <- err
			}
			co.queue = nil
			c.settleLocked(co)
		}
		return
	}
	if !current || len(co.queue) == 0 {
		// Nobody wants it any more: give it back.
		c.giveBack(co.k.key, req.Owner)
		return
	}
	w := co.queue[0]
	co.queue = co.queue[1:]
	co.holding = true
	l := c.newLock(co.k.key, req.Owner, co.opts, lease, sent)
	l.onRelease = func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		// co stayed registered while held (settleLocked keeps holders).
		co.holding = false
		c.kickLocked(co)
		c.settleLocked(co)
	}
	w.got <- l
}

// giveBack releases an unwanted grant, in the background so the caller
// (holding c.mu) does not wait on the network.
func (c *handles) giveBack(key, owner string) {
	c.releaseUnwanted(api.ReleaseRequest{Key: key, Owner: owner}, false)
}

// abandonAcquire gives back whatever grant an acquire that failed with
// err may have left behind, so that a hold nobody knows of ends now
// instead of with its TTL: the node keeps a grant that raced with a
// cancelled wait when the request carried an id (another attempt of the
// same request may have delivered it), and a request cut off in transit
// may still be applied. Only for owner tokens this client made up: a
// caller's own token may be holding the key through another handle.
func (c *handles) abandonAcquire(ctx context.Context, req api.AcquireRequest, err error) {
	if ctx.Err() == nil && definiteRefusal(err) {
		return
	}
	c.releaseUnwanted(api.ReleaseRequest{Key: req.Key, Keys: req.Keys, Owner: req.Owner}, true)
}

// definiteRefusal reports whether err is the cluster's final answer that
// the acquire was not granted.
func definiteRefusal(err error) bool {
	for _, e := range []error{api.ErrLocked, api.ErrLockDelay, api.ErrBadRequest, api.ErrLimit,
		api.ErrConflict, api.ErrSessionExpired, api.ErrWaitTimeout, api.ErrMaxHold} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// unwantedRetry is how long releaseUnwanted waits before asking again
// when the first release found nothing: an acquire still in flight (held
// back at the leader, or being forwarded) is applied by then.
const unwantedRetry = time.Second

// releaseUnwanted releases a grant nobody wants, in the background; with
// again, a release that found nothing held is repeated once after
// unwantedRetry.
func (c *handles) releaseUnwanted(req api.ReleaseRequest, again bool) {
	key := req.Key
	if key == "" && len(req.Keys) > 0 {
		key = req.Keys[0]
	}
	// Ends when the release requests answer or time out.
	go func() {
		for try := 0; ; try++ {
			ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RequestTimeout)
			r := req
			r.RequestID = ""
			res, err := c.Release(ctx, r)
			cancel()
			switch {
			case err == nil && res.Released:
				c.log.Debug("gave back an unwanted grant", "lock", key)
				return
			case err != nil && !errors.Is(err, api.ErrNotHeld) && !errors.Is(err, api.ErrNotOwner):
				c.log.Warn("could not give back an unwanted grant; it expires with its TTL", "lock", key, "error", err)
				return
			case !again || try > 0:
				return
			}
			time.Sleep(unwantedRetry)
		}
	}()
}
