package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
)

// Call sends req to the node whose transport listens at addr and waits for
// the answer. Concurrent calls to one peer are pipelined, with request ids,
// over at most MaxConnsPerPeer pooled connections.
//
// The deadline is ctx's, or CallTimeout if ctx has none; when it passes (or
// ctx is cancelled) Call returns an error wrapping ctx.Err() and asks the
// peer to cancel the handler. If the connection fails while the call is in
// flight, Call fails at once with an error wrapping ErrConnLost: the
// request may or may not have run. A handler error comes back wrapping
// ErrRemote. Call does not retain req after it returns.
func (t *Transport) Call(ctx context.Context, addr string, req []byte) ([]byte, error) {
	if len(req) > MaxFrameSize {
		return nil, fmt.Errorf("transport: request of %d bytes: %w", len(req), ErrTooLarge)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.cfg.CallTimeout)
		defer cancel()
	}
	p := t.peer(addr)
	for attempt := 1; ; attempt++ {
		c, err := t.getConn(ctx, p)
		if err != nil {
			return nil, err
		}
		id, ch, err := c.register()
		if err != nil {
			// It broke before we sent anything, so another connection may be
			// tried; but not forever, if connections to addr keep breaking.
			p.remove(c)
			if attempt < 3 {
				continue
			}
			return nil, fmt.Errorf("transport: call to %s: %w", addr, err)
		}
		if !c.w.send(kindRequest, id, req) {
			// The writer stopped; fail() is delivering (or has delivered) ErrConnLost.
			r := <-ch
			return nil, r.err
		}
		select {
		case r := <-ch:
			return r.body, r.err
		case <-ctx.Done():
			if c.unregister(id) {
				c.w.send(kindCancel, id, nil)
				return nil, fmt.Errorf("transport: call to %s: %w", addr, ctx.Err())
			}
			r := <-ch // the answer (or the failure) was being delivered at this instant
			return r.body, r.err
		}
	}
}

type result struct {
	body []byte
	err  error
}

// peer is the pool of RPC connections to one address.
type peer struct {
	addr    string
	mu      sync.Mutex
	conns   []*clientConn
	dialing int
	changed chan struct{} // closed and replaced whenever conns or dialing change
}

func (p *peer) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *peer) remove(c *clientConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.conns {
		if x == c {
			p.conns = append(p.conns[:i], p.conns[i+1:]...)
			p.notifyLocked()
			return
		}
	}
}

// peer returns the pool for addr. Pools are kept for the Transport's life;
// a cluster talks to few addresses.
func (t *Transport) peer(addr string) *peer {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.peers[addr]
	if p == nil {
		p = &peer{addr: addr, changed: make(chan struct{})}
		t.peers[addr] = p
	}
	return p
}

// getConn picks the least-loaded connection to p, dialing a new one while
// every existing one is busy and the pool is below MaxConnsPerPeer.
func (t *Transport) getConn(ctx context.Context, p *peer) (*clientConn, error) {
	for {
		if t.ctx.Err() != nil {
			return nil, ErrClosed
		}
		p.mu.Lock()
		var best *clientConn
		bestN := 0
		for _, c := range p.conns {
			if n := c.load(); best == nil || n < bestN {
				best, bestN = c, n
			}
		}
		room := len(p.conns)+p.dialing < t.cfg.MaxConnsPerPeer
		if best != nil && (bestN == 0 || !room) {
			p.mu.Unlock()
			return best, nil
		}
		if room {
			p.dialing++
			p.mu.Unlock()
			c, err := t.dialRPC(ctx, p)
			p.mu.Lock()
			p.dialing--
			// A connection that broke already (its fail found nothing to
			// remove) must not enter the pool; one that breaks later is
			// removed by fail, which needs p.mu, held here.
			if err == nil && c.ok() {
				p.conns = append(p.conns, c)
			}
			p.notifyLocked()
			p.mu.Unlock()
			if err == nil {
				return c, nil
			}
			if best != nil {
				return best, nil
			}
			return nil, err
		}
		wait := p.changed
		p.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("transport: call to %s: %w", p.addr, ctx.Err())
		case <-t.ctx.Done():
			return nil, ErrClosed
		}
	}
}

// clientConn is the calling side of one RPC connection.
type clientConn struct {
	t    *Transport
	p    *peer
	raw  net.Conn
	conn net.Conn
	w    *frameWriter
	done chan struct{} // closed by fail

	mu      sync.Mutex
	pending map[uint64]chan result
	nextID  uint64
	err     error // why the connection broke; nil while usable
}

func (t *Transport) dialRPC(ctx context.Context, p *peer) (*clientConn, error) {
	raw, conn, err := t.dial(ctx, p.addr, typeRPC)
	if err != nil {
		return nil, err
	}
	c := &clientConn{
		t: t, p: p, raw: raw, conn: conn,
		w:       newFrameWriter(conn, t.cfg.CallTimeout),
		done:    make(chan struct{}),
		pending: make(map[uint64]chan result),
	}
	// Makes another service on addr answer at once (notpeer.go).
	c.w.send(kindCancel, probeID, nil)
	// Ends when the connection fails or is closed (by the peer, by a failed
	// write, or by Close); it then fails every pending call.
	if !t.spawn(c.readLoop) {
		t.untrack(raw)
		raw.Close()
		return nil, ErrClosed
	}
	// Ends when c.done is closed (fail) or a write fails (then it calls fail).
	t.spawn(func() {
		if err := c.w.run(c.done); err != nil {
			c.fail(err)
		}
	})
	t.log.Debug("rpc connection opened", "peer", p.addr)
	return c, nil
}

func (c *clientConn) load() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

func (c *clientConn) ok() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err == nil
}

// register allocates a request id; it fails if the connection is broken.
func (c *clientConn) register() (uint64, chan result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, nil, c.err
	}
	c.nextID++
	ch := make(chan result, 1)
	c.pending[c.nextID] = ch
	return c.nextID, ch, nil
}

// unregister forgets id; false if its answer (or failure) was already taken
// for delivery.
func (c *clientConn) unregister(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pending[id]; !ok {
		return false
	}
	delete(c.pending, id)
	return true
}

func (c *clientConn) deliver(id uint64, r result) {
	c.mu.Lock()
	ch := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ch != nil {
		ch <- r // buffered; each channel receives exactly once
	}
	// An unknown id is a call that already gave up: drop the answer.
}

func (c *clientConn) readLoop() {
	r := bufio.NewReaderSize(c.conn, 64<<10)
	if err := checkPeerAnswer(r, c.p.addr); err != nil {
		c.fail(err)
		return
	}
	var hdr [frameHeader]byte
	for {
		f, err := readFrame(r, &hdr, MaxFrameSize)
		if err != nil {
			c.fail(err)
			return
		}
		switch f.kind {
		case kindResponse:
			c.deliver(f.id, result{body: f.body})
		case kindError:
			c.deliver(f.id, result{err: fmt.Errorf("%w: %s", ErrRemote, f.body)})
		default:
			c.fail(fmt.Errorf("%w: unexpected %v frame from server", ErrProtocol, f.kind))
			return
		}
	}
}

// fail marks the connection broken, closes it, takes it out of the pool and
// fails every pending call with ErrConnLost. Idempotent.
func (c *clientConn) fail(cause error) {
	err := c.t.lostErr(cause)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()

	close(c.done)
	c.conn.Close()
	c.t.untrack(c.raw)
	c.p.remove(c)
	for _, ch := range pending {
		ch <- result{err: fmt.Errorf("transport: call to %s: %w", c.p.addr, err)}
	}
	switch {
	case c.t.ctx.Err() != nil:
	case errors.Is(cause, ErrNotPeer):
		c.t.log.Warn("rpc connection dropped: not a peer port", "peer", c.p.addr, "error", cause)
	case errors.Is(cause, ErrProtocol):
		c.t.log.Warn("rpc connection dropped: bad frame", "peer", c.p.addr, "error", cause)
	default:
		c.t.log.Debug("rpc connection lost", "peer", c.p.addr, "error", cause, "pending", len(pending))
	}
}
