package testcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// Errors the fault network returns where real TCP would fail.
var (
	errPartitioned = errors.New("testcluster: link cut by fault injection")
	errDropped     = errors.New("testcluster: message dropped by fault injection")
	errNodeDown    = errors.New("testcluster: node is down")
)

// Faults are message-level faults, applied to every write on every link
// between nodes (raft and forwarded RPCs). TCP never loses, duplicates or
// reorders bytes inside a connection, so each fault is the closest thing a
// real network does to a message:
//   - Drop: the message is lost and its connection breaks (as TCP does when
//     segments stop getting through); raft and the transport reconnect.
//   - Delay: the message is held for a random time up to MaxDelay.
//   - Duplicate: a raft request (AppendEntries, RequestVote, PreVote) is
//     also delivered a second time, later, over a fresh connection, as a
//     stale retransmission would be; its answer is thrown away.
type Faults struct {
	Drop      float64       // probability in [0,1]
	Delay     float64       // probability in [0,1]
	MaxDelay  time.Duration // upper bound of one delay; default 20ms
	Duplicate float64       // probability in [0,1], raft requests only
}

// Connection kinds, from the transport's first byte.
const (
	kindUnknown byte = 0
	kindRaft    byte = 0x01
	kindRPC     byte = 0x02
)

// faultNet connects the nodes of one Cluster over loopback TCP through
// connection wrappers that enforce partitions, pauses, crashes and
// message faults. Dialers send one header byte (their node index) so the
// accepting side knows the link too.
type faultNet struct {
	mu     sync.Mutex
	n      int
	addrs  []string // raft address of each node (stable across restarts)
	cut    [][]bool // cut[a][b]: a cannot reach b
	down   []bool
	gates  []chan struct{} // closed while the node runs; open while paused
	faults Faults
	nw     Network
	rng    *rand.Rand
	conns  map[*faultConn]struct{}
	closed bool
	wg     sync.WaitGroup // replay goroutines
}

func newFaultNet(n int, seed uint64, nw Network) *faultNet {
	f := &faultNet{
		n:     n,
		nw:    nw,
		addrs: make([]string, n),
		cut:   make([][]bool, n),
		down:  make([]bool, n),
		gates: make([]chan struct{}, n),
		rng:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		conns: make(map[*faultConn]struct{}),
	}
	for i := range n {
		f.cut[i] = make([]bool, n)
		g := make(chan struct{})
		close(g)
		f.gates[i] = g
	}
	return f
}

func (f *faultNet) index(addr string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, a := range f.addrs {
		if a == addr {
			return i
		}
	}
	return -1
}

// linkOK reports whether a can send to b now. Caller holds f.mu.
func (f *faultNet) linkOKLocked(a, b int) bool {
	return !f.down[a] && !f.down[b] && !f.cut[a][b]
}

func (f *faultNet) linkOK(a, b int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.linkOKLocked(a, b)
}

func (f *faultNet) gate(i int) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gates[i]
}

// setCut replaces the cut matrix and breaks every connection that
// crosses a cut link (in either direction, as TCP needs both).
func (f *faultNet) setCut(cut [][]bool) {
	f.mu.Lock()
	f.cut = cut
	f.mu.Unlock()
	f.breakWhere(func(c *faultConn) bool { return cut[c.local][c.remote] || cut[c.remote][c.local] })
}

func (f *faultNet) setDown(i int, down bool) {
	f.mu.Lock()
	f.down[i] = down
	f.mu.Unlock()
	if down {
		f.breakWhere(func(c *faultConn) bool { return c.local == i || c.remote == i })
	}
}

func (f *faultNet) setPaused(i int, paused bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.gates[i]:
		if paused {
			f.gates[i] = make(chan struct{})
		}
	default:
		if !paused {
			close(f.gates[i])
		}
	}
}

func (f *faultNet) setFaults(x Faults) {
	if x.MaxDelay <= 0 {
		x.MaxDelay = 20 * time.Millisecond
	}
	f.mu.Lock()
	f.faults = x
	f.mu.Unlock()
}

func (f *faultNet) breakWhere(pred func(*faultConn) bool) {
	f.mu.Lock()
	var victims []*faultConn
	for c := range f.conns {
		if pred(c) {
			victims = append(victims, c)
		}
	}
	f.mu.Unlock()
	for _, c := range victims {
		c.Close()
	}
}

// roll draws the faults for one message.
func (f *faultNet) roll() (drop bool, delay time.Duration, dup bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.faults
	if x.Drop > 0 && f.rng.Float64() < x.Drop {
		return true, 0, false
	}
	if x.Delay > 0 && f.rng.Float64() < x.Delay {
		delay = time.Duration(f.rng.Int64N(int64(x.MaxDelay) + 1))
	}
	dup = x.Duplicate > 0 && f.rng.Float64() < x.Duplicate
	return false, delay, dup
}

func (f *faultNet) track(c *faultConn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *faultNet) untrack(c *faultConn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

// close breaks every connection and waits for replays.
func (f *faultNet) close() {
	f.mu.Lock()
	f.closed = true
	for i, g := range f.gates {
		select {
		case <-g:
		default:
			close(g)
			f.gates[i] = g
		}
	}
	f.mu.Unlock()
	f.breakWhere(func(*faultConn) bool { return true })
	f.wg.Wait()
}

// dialer returns node src's transport Dial function.
func (f *faultNet) dialer(src int) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		dst := f.index(addr)
		if dst < 0 {
			return nil, fmt.Errorf("testcluster: dial %s: not a cluster address", addr)
		}
		select { // a paused node dials nothing until resumed
		case <-f.gate(src):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if !f.linkOK(src, dst) || !f.linkOK(dst, src) {
			return nil, fmt.Errorf("dial %s: %w", addr, errPartitioned)
		}
		raw, err := f.nw.Dial(ctx, addr)
		if err != nil {
			return nil, err
		}
		if _, err := raw.Write([]byte{byte(src)}); err != nil {
			raw.Close()
			return nil, err
		}
		c := &faultConn{Conn: raw, net: f, local: src, remote: dst, dialer: true, done: make(chan struct{})}
		if !f.track(c) {
			raw.Close()
			return nil, errNodeDown
		}
		return c, nil
	}
}

// accepted wraps a connection accepted by node dst whose header named
// src; nil if the link is down.
func (f *faultNet) accepted(raw net.Conn, src, dst int) net.Conn {
	if src < 0 || src >= f.n || !f.linkOK(src, dst) || !f.linkOK(dst, src) {
		raw.Close()
		return nil
	}
	c := &faultConn{Conn: raw, net: f, local: dst, remote: src, done: make(chan struct{})}
	if !f.track(c) {
		raw.Close()
		return nil
	}
	return c
}

// faultConn is one end of a link between two nodes.
type faultConn struct {
	net.Conn
	net           *faultNet
	local, remote int
	dialer        bool

	kindOnce sync.Once
	kind     byte

	closeOnce sync.Once
	done      chan struct{}
}

func (c *faultConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.done)
		err = c.Conn.Close()
		c.net.untrack(c)
	})
	return err
}

func (c *faultConn) setKind(b byte) {
	c.kindOnce.Do(func() { c.kind = b })
}

// waitRunning blocks while the local node is paused.
func (c *faultConn) waitRunning() error {
	select {
	case <-c.net.gate(c.local):
		return nil
	case <-c.done:
		return net.ErrClosed
	}
}

func (c *faultConn) Write(p []byte) (int, error) {
	if err := c.waitRunning(); err != nil {
		return 0, err
	}
	if !c.net.linkOK(c.local, c.remote) {
		c.Close()
		return 0, errPartitioned
	}
	first := false
	c.kindOnce.Do(func() {
		first = true
		if len(p) > 0 {
			c.kind = p[0]
		}
	})
	if !first && len(p) > 0 {
		drop, delay, dup := c.net.roll()
		if drop {
			c.Close()
			return 0, errDropped
		}
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-c.done:
				t.Stop()
				return 0, net.ErrClosed
			}
		}
		if dup && c.dialer && c.kind == kindRaft && completeRaftRequest(p) {
			c.net.replay(c.local, c.remote, append([]byte(nil), p...))
		}
	}
	return c.Conn.Write(p)
}

func (c *faultConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		if !c.dialer {
			c.setKind(p[0])
		}
		if werr := c.waitRunning(); werr != nil {
			return 0, werr
		}
		if !c.net.linkOK(c.remote, c.local) {
			c.Close()
			return 0, errPartitioned
		}
	}
	return n, err
}

// completeRaftRequest reports whether p is exactly one raft request that
// is safe to deliver twice: its type byte and one msgpack value.
func completeRaftRequest(p []byte) bool {
	if len(p) < 2 {
		return false
	}
	switch p[0] {
	case 0, 1, 4: // AppendEntries, RequestVote, RequestPreVote
	default:
		return false
	}
	dec := codec.NewDecoderBytes(p[1:], &codec.MsgpackHandle{})
	var v interface{}
	if err := dec.Decode(&v); err != nil {
		return false
	}
	return dec.NumBytesRead() == len(p)-1
}

// replay delivers msg from src to dst a second time over a fresh
// connection, a little later, discarding the answer.
func (f *faultNet) replay(src, dst int, msg []byte) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	delay := time.Duration(f.rng.Int64N(int64(10 * time.Millisecond)))
	addr := f.addrs[dst]
	f.wg.Add(1)
	f.mu.Unlock()
	// Ends within about 2s: the connection has a deadline.
	go func() {
		defer f.wg.Done()
		time.Sleep(delay) // the duplicate's own lateness, not synchronisation
		if !f.linkOK(src, dst) {
			return
		}
		dctx, cancel := context.WithTimeout(context.Background(), time.Second)
		raw, err := f.nw.Dial(dctx, addr)
		cancel()
		if err != nil {
			return
		}
		c := &faultConn{Conn: raw, net: f, local: src, remote: dst, dialer: true, done: make(chan struct{})}
		c.setKind(kindRaft)
		if !f.track(c) {
			raw.Close()
			return
		}
		defer c.Close()
		_ = raw.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := raw.Write(append([]byte{byte(src), kindRaft}, msg...)); err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(raw, 1<<20))
	}()
}

// stableListener owns a real listener for the life of the Cluster, so a
// node keeps its addresses across Crash and Restart. A node's server
// attaches a virtual listener; while none is attached, connections are
// refused (closed at once), as by a dead process.
type stableListener struct {
	ln   net.Listener
	wrap func(net.Conn) net.Conn // optional: header read and fault wrapping

	mu  sync.Mutex
	cur *virtualListener
	wg  sync.WaitGroup
}

func newStableListener(nw Network, wrap func(net.Conn) net.Conn) (*stableListener, error) {
	ln, err := nw.Listen()
	if err != nil {
		return nil, err
	}
	s := &stableListener{ln: ln, wrap: wrap}
	s.wg.Add(1)
	// Ends when close closes the real listener.
	go func() {
		defer s.wg.Done()
		s.acceptLoop()
	}()
	return s, nil
}

func (s *stableListener) addr() string { return s.ln.Addr().String() }

func (s *stableListener) acceptLoop() {
	for {
		raw, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if s.wrap == nil {
			s.deliver(raw)
			continue
		}
		s.wg.Add(1)
		// Ends after the header is read (bounded by a deadline).
		go func() {
			defer s.wg.Done()
			if c := s.wrap(raw); c != nil {
				s.deliver(c)
			}
		}()
	}
}

func (s *stableListener) deliver(c net.Conn) {
	s.mu.Lock()
	v := s.cur
	s.mu.Unlock()
	if v == nil || !v.offer(c) {
		c.Close()
	}
}

// attach returns a listener for a new incarnation of the node's server.
func (s *stableListener) attach() net.Listener {
	v := &virtualListener{s: s, ch: make(chan net.Conn), done: make(chan struct{})}
	s.mu.Lock()
	s.cur = v
	s.mu.Unlock()
	return v
}

func (s *stableListener) close() {
	s.ln.Close()
	s.mu.Lock()
	v := s.cur
	s.mu.Unlock()
	if v != nil {
		v.Close()
	}
	s.wg.Wait()
}

type virtualListener struct {
	s    *stableListener
	ch   chan net.Conn
	once sync.Once
	done chan struct{}
}

func (v *virtualListener) offer(c net.Conn) bool {
	select {
	case v.ch <- c:
		return true
	case <-v.done:
		return false
	}
}

func (v *virtualListener) Accept() (net.Conn, error) {
	select {
	case c := <-v.ch:
		return c, nil
	case <-v.done:
		return nil, net.ErrClosed
	}
}

func (v *virtualListener) Close() error {
	v.once.Do(func() {
		close(v.done)
		v.s.mu.Lock()
		if v.s.cur == v {
			v.s.cur = nil
		}
		v.s.mu.Unlock()
	})
	return nil
}

func (v *virtualListener) Addr() net.Addr { return v.s.ln.Addr() }

// raftWrap reads the dialer's header byte of a connection accepted by
// node dst and wraps it for fault injection.
func (f *faultNet) raftWrap(dst int) func(net.Conn) net.Conn {
	return func(raw net.Conn) net.Conn {
		_ = raw.SetReadDeadline(time.Now().Add(5 * time.Second))
		var b [1]byte
		if _, err := io.ReadFull(raw, b[:]); err != nil {
			raw.Close()
			return nil
		}
		_ = raw.SetReadDeadline(time.Time{})
		return f.accepted(raw, int(b[0]), dst)
	}
}
