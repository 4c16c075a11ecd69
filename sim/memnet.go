package sim

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Network is an in-memory network of byte streams with TCP's promises:
// each connection delivers its bytes once, in order, or breaks. Every
// wait on it (Accept, Read, a dial's backlog) is a channel operation, so
// a goroutine waiting on the network is durably blocked in a synctest
// bubble and virtual time moves on; a real socket would stall the
// bubble's clock. Faults between nodes (partitions, loss, duplicates,
// pauses) are testcluster's, layered on top of these connections exactly
// as they are on loopback TCP.
//
// Each write reaches the reader after a latency drawn from the seeded
// source in [MinLatency, MaxLatency], never before the connection's
// earlier writes (TCP does not reorder inside a connection; separate
// connections race freely).
type Network struct {
	MinLatency, MaxLatency time.Duration

	mu        sync.Mutex
	rng       *rand.Rand
	port      int
	listeners map[string]*listener
}

// NewNetwork returns an empty network whose latencies are drawn from
// seed.
func NewNetwork(seed uint64) *Network {
	return &Network{
		MinLatency: 50 * time.Microsecond, MaxLatency: 500 * time.Microsecond,
		rng: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d)), port: 10000,
		listeners: map[string]*listener{},
	}
}

// Errors a dial or a write returns where TCP would.
var (
	errRefused = fmt.Errorf("sim: connection refused: %w", syscall.ECONNREFUSED)
	errReset   = fmt.Errorf("sim: connection reset by peer: %w", syscall.ECONNRESET)
)

type addr string

func (a addr) Network() string { return "tcp" }
func (a addr) String() string  { return string(a) }

// Listen opens a listener on a fresh address of the network.
func (n *Network) Listen() (net.Listener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.port++
	a := addr("10.0.0.1:" + strconv.Itoa(n.port))
	l := &listener{n: n, addr: a, backlog: make(chan *conn, 128), done: make(chan struct{})}
	n.listeners[string(a)] = l
	return l, nil
}

// Dial connects to addr, or fails as TCP does when nothing listens there.
func (n *Network) Dial(ctx context.Context, address string) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	l := n.listeners[address]
	n.port++
	local := addr("10.0.0.2:" + strconv.Itoa(n.port))
	n.mu.Unlock()
	if l == nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: addr(address), Err: errRefused}
	}
	ab, ba := newStream(n), newStream(n)
	client := &conn{local: local, remote: l.addr, rd: ba, wr: ab, done: make(chan struct{})}
	server := &conn{local: l.addr, remote: local, rd: ab, wr: ba, done: make(chan struct{})}
	select {
	case l.backlog <- server:
		select {
		case <-l.done: // closed meanwhile: Close may have drained the backlog already
			server.Close()
			client.Close()
		default:
			return client, nil
		}
	case <-l.done:
	default: // backlog full: refused, as a SYN queue overflow would be
	}
	return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: addr(address), Err: errRefused}
}

// DialNet is Dial in the signature of http.Transport.DialContext and
// go-redis' Dialer.
func (n *Network) DialNet(ctx context.Context, _, address string) (net.Conn, error) {
	return n.Dial(ctx, address)
}

func (n *Network) latency() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.MaxLatency <= n.MinLatency {
		return n.MinLatency
	}
	return n.MinLatency + time.Duration(n.rng.Int64N(int64(n.MaxLatency-n.MinLatency)))
}

type listener struct {
	n       *Network
	addr    addr
	backlog chan *conn
	once    sync.Once
	done    chan struct{}
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.backlog:
		return c, nil
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
	}
}

func (l *listener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.n.mu.Lock()
		if l.n.listeners[string(l.addr)] == l {
			delete(l.n.listeners, string(l.addr))
		}
		l.n.mu.Unlock()
		for {
			select {
			case c := <-l.backlog:
				c.Close()
			default:
				return
			}
		}
	})
	return nil
}

func (l *listener) Addr() net.Addr { return l.addr }

// stream is one direction of a connection: chunks in order, each readable
// from its arrival time.
type stream struct {
	n      *Network
	mu     sync.Mutex
	chunks []chunk
	last   time.Time     // arrival of the latest chunk (order is kept)
	eof    bool          // the writer closed: EOF once drained
	reset  bool          // the reader closed: writes fail
	wake   chan struct{} // capacity 1: something changed
}

type chunk struct {
	at time.Time
	b  []byte
}

func newStream(n *Network) *stream { return &stream{n: n, wake: make(chan struct{}, 1)} }

func (s *stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// conn is one end of a connection.
type conn struct {
	local, remote addr
	rd, wr        *stream

	once sync.Once
	done chan struct{}

	dmu           sync.Mutex
	readDeadline  time.Time
	writeDeadline time.Time
	deadlineMoved chan struct{} // closed when a deadline changes
}

func (c *conn) Read(p []byte) (int, error) {
	s := c.rd
	for {
		select {
		case <-c.done:
			return 0, &net.OpError{Op: "read", Net: "tcp", Addr: c.remote, Err: net.ErrClosed}
		default:
		}
		now := time.Now()
		s.mu.Lock()
		var wait time.Duration
		if len(s.chunks) > 0 {
			ch := &s.chunks[0]
			if !ch.at.After(now) {
				n := copy(p, ch.b)
				ch.b = ch.b[n:]
				if len(ch.b) == 0 {
					s.chunks = s.chunks[1:]
				}
				s.mu.Unlock()
				return n, nil
			}
			wait = ch.at.Sub(now)
		} else if s.eof {
			s.mu.Unlock()
			return 0, io.EOF
		}
		s.mu.Unlock()

		dl, moved := c.deadline(true)
		if !dl.IsZero() && !dl.After(now) {
			return 0, &net.OpError{Op: "read", Net: "tcp", Addr: c.remote, Err: os.ErrDeadlineExceeded}
		}
		if !dl.IsZero() && (wait == 0 || dl.Sub(now) < wait) {
			wait = dl.Sub(now)
		}
		var timer <-chan time.Time
		var t *time.Timer
		if wait > 0 {
			t = time.NewTimer(wait)
			timer = t.C
		}
		select {
		case <-s.wake:
		case <-timer:
		case <-moved:
		case <-c.done:
		}
		if t != nil {
			t.Stop()
		}
	}
}

func (c *conn) Write(p []byte) (int, error) {
	select {
	case <-c.done:
		return 0, &net.OpError{Op: "write", Net: "tcp", Addr: c.remote, Err: net.ErrClosed}
	default:
	}
	if dl, _ := c.deadline(false); !dl.IsZero() && !dl.After(time.Now()) {
		return 0, &net.OpError{Op: "write", Net: "tcp", Addr: c.remote, Err: os.ErrDeadlineExceeded}
	}
	if len(p) == 0 {
		return 0, nil
	}
	s := c.wr
	at := time.Now().Add(s.n.latency())
	s.mu.Lock()
	if s.reset {
		s.mu.Unlock()
		return 0, &net.OpError{Op: "write", Net: "tcp", Addr: c.remote, Err: errReset}
	}
	if at.Before(s.last) {
		at = s.last
	}
	s.last = at
	s.chunks = append(s.chunks, chunk{at: at, b: append([]byte(nil), p...)})
	s.mu.Unlock()
	s.signal()
	return len(p), nil
}

// Close ends both directions: the peer reads what was written, then EOF;
// its writes fail.
func (c *conn) Close() error {
	c.once.Do(func() {
		close(c.done)
		c.wr.mu.Lock()
		c.wr.eof = true
		c.wr.mu.Unlock()
		c.wr.signal()
		c.rd.mu.Lock()
		c.rd.reset = true
		c.rd.chunks = nil
		c.rd.mu.Unlock()
		c.rd.signal()
	})
	return nil
}

func (c *conn) LocalAddr() net.Addr  { return c.local }
func (c *conn) RemoteAddr() net.Addr { return c.remote }

func (c *conn) deadline(read bool) (time.Time, <-chan struct{}) {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	if c.deadlineMoved == nil {
		c.deadlineMoved = make(chan struct{})
	}
	if read {
		return c.readDeadline, c.deadlineMoved
	}
	return c.writeDeadline, c.deadlineMoved
}

func (c *conn) setDeadline(read, write bool, t time.Time) {
	c.dmu.Lock()
	if read {
		c.readDeadline = t
	}
	if write {
		c.writeDeadline = t
	}
	if c.deadlineMoved != nil {
		close(c.deadlineMoved)
	}
	c.deadlineMoved = make(chan struct{})
	c.dmu.Unlock()
}

func (c *conn) SetDeadline(t time.Time) error      { c.setDeadline(true, true, t); return nil }
func (c *conn) SetReadDeadline(t time.Time) error  { c.setDeadline(true, false, t); return nil }
func (c *conn) SetWriteDeadline(t time.Time) error { c.setDeadline(false, true, t); return nil }

var _ net.Conn = (*conn)(nil)
