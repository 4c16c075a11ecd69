package transport

import (
	"fmt"
	"net"
	"sync/atomic"
	"time"
)

// Limits on accepted connections, so connections that send nothing, or
// stall inside their first request, cannot pile up on the peer port.

// bigFirstRequest is how much of a first request must arrive within
// HandshakeTimeout of the accept; past it, the rest only has to keep
// coming (each read within HandshakeTimeout): a snapshot can be large.
const bigFirstRequest = 1 << 20

// trackAccepted records an accepted connection like track; full reports
// that MaxConns accepted connections are open already (c is then not
// recorded).
func (t *Transport) trackAccepted(c net.Conn) (ok, full bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false, false
	}
	if len(t.in) >= t.cfg.MaxConns {
		return false, true
	}
	t.conns[c] = struct{}{}
	t.in[c] = struct{}{}
	return true, false
}

// refuse closes a connection accepted past MaxConns; the warning is
// logged at most every 10 s, with the count since.
func (t *Transport) refuse(c net.Conn) {
	c.Close()
	t.refused.Add(1)
	if now := time.Now().UnixNano(); now-t.lastRefusal.Load() > int64(10*time.Second) {
		t.lastRefusal.Store(now)
		t.log.Warn("refusing peer connections: at the connection limit", "max_conns", t.cfg.MaxConns, "refused", t.refused.Swap(0))
	}
}

// awaitFirstRequest arms the first-request deadline on an accepted
// connection whose type byte (and TLS handshake) are read: its first
// request must be complete by accepted+HandshakeTimeout (see
// Config.HandshakeTimeout). It returns the connection to use; the
// deadline is lifted by a raft connection's first answer, or by serveRPC
// once it has read the first frame (endHandshake).
func (t *Transport) awaitFirstRequest(raw, conn net.Conn, typ byte, accepted time.Time) (net.Conn, error) {
	if err := raw.SetReadDeadline(accepted.Add(t.cfg.HandshakeTimeout)); err != nil {
		return nil, fmt.Errorf("first request deadline: %w", err)
	}
	// raft answers a request only once it has read all of it, so its
	// first write ends the handshake; RPC answers concurrently with
	// reading, so serveRPC ends it.
	return &handshakeConn{Conn: conn, raw: raw, timeout: t.cfg.HandshakeTimeout, endOnWrite: typ != typeRPC}, nil
}

// handshakeConn holds the first-request deadline of an accepted
// connection (on raw) until end.
type handshakeConn struct {
	net.Conn
	raw        net.Conn
	timeout    time.Duration
	endOnWrite bool
	done       atomic.Bool
	read       int // bytes read before end (by the reading goroutine only)
}

func (c *handshakeConn) Read(p []byte) (int, error) {
	if c.done.Load() {
		return c.Conn.Read(p)
	}
	if c.read > bigFirstRequest {
		// A large first request: it only has to keep coming.
		_ = c.raw.SetReadDeadline(time.Now().Add(c.timeout))
	}
	n, err := c.Conn.Read(p)
	c.read += n
	return n, err
}

func (c *handshakeConn) Write(p []byte) (int, error) {
	if c.endOnWrite && !c.done.Load() {
		c.end()
	}
	return c.Conn.Write(p)
}

// end lifts the deadline: the connection has proven itself a peer's.
func (c *handshakeConn) end() {
	if c.done.CompareAndSwap(false, true) {
		_ = c.raw.SetReadDeadline(time.Time{})
	}
}

// endHandshake ends conn's first-request deadline if it has one.
func endHandshake(conn net.Conn) {
	if hc, ok := conn.(*handshakeConn); ok {
		hc.end()
	}
}
