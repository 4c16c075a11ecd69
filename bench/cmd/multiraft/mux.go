package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/transport"
)

// Errors of the group multiplexer.
var (
	errMuxClosed  = errors.New("multiraft: group closed")
	errNoGroup    = errors.New("multiraft: no such group on this node")
	errEmptyFrame = errors.New("multiraft: empty request (no group byte)")
	errGroupTaken = errors.New("multiraft: group id already open on this node")
)

// Mux runs many raft groups over one peer listener: one
// transport.Transport (the product's, with its handshake and limits)
// whose raft connections carry one more leading byte, the group id, and
// whose RPC requests start with that byte too. Each group sees a
// cluster.Transport of its own (Group), so an unmodified cluster.Node
// runs on it.
type Mux struct {
	tr *transport.Transport

	mu     sync.Mutex
	groups map[byte]*groupTransport

	done chan struct{} // closed by Close
	once sync.Once
	wg   sync.WaitGroup
}

// NewMux takes over tr: it serves tr's RPCs and accepts its raft
// connections until Close, which closes tr.
func NewMux(tr *transport.Transport) *Mux {
	m := &Mux{tr: tr, groups: make(map[byte]*groupTransport), done: make(chan struct{})}
	tr.Serve(m.handleRPC)
	m.wg.Add(1)
	// Ends when tr's raft stream layer is closed (Close).
	go func() {
		defer m.wg.Done()
		m.acceptLoop()
	}()
	return m
}

// Addr is the shared listener's advertised address (every group's raft
// address on this node).
func (m *Mux) Addr() net.Addr { return m.tr.Addr() }

// Close closes the shared transport and waits for the accept loop.
func (m *Mux) Close() error {
	m.once.Do(func() { close(m.done) })
	err := m.tr.RaftStreamLayer().Close()
	if cerr := m.tr.Close(); cerr != nil && err == nil {
		err = cerr
	}
	m.wg.Wait()
	return err
}

// Group returns group id's view of the shared listener, to be given to
// one cluster.Node as Config.Transport; the node closes it.
func (m *Mux) Group(id byte) (cluster.Transport, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.groups[id]; ok {
		return nil, fmt.Errorf("%w: %d", errGroupTaken, id)
	}
	g := &groupTransport{m: m, id: id, acceptCh: make(chan net.Conn), closed: make(chan struct{})}
	m.groups[id] = g
	return g, nil
}

func (m *Mux) group(id byte) *groupTransport {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.groups[id]
}

func (m *Mux) acceptLoop() {
	l := m.tr.RaftStreamLayer()
	for {
		c, err := l.Accept()
		if err != nil {
			return // the layer is closed: transport.ErrClosed is its only error
		}
		m.wg.Add(1)
		// Ends after reading one byte and handing the connection over or
		// closing it; the transport's first-request deadline
		// (HandshakeTimeout) bounds the read.
		go func() {
			defer m.wg.Done()
			m.route(c)
		}()
	}
}

// route reads an accepted raft connection's group byte and queues it for
// that group's Accept; a connection for no open group is closed. The read
// is in a goroutine of its own, so a silent peer never holds the accept
// loop.
func (m *Mux) route(c net.Conn) {
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		c.Close()
		return
	}
	g := m.group(b[0])
	if g == nil {
		c.Close()
		return
	}
	select {
	case g.acceptCh <- c:
	case <-g.closed:
		c.Close()
	case <-m.done:
		c.Close()
	}
}

func (m *Mux) handleRPC(ctx context.Context, req []byte) ([]byte, error) {
	if len(req) == 0 {
		return nil, errEmptyFrame
	}
	g := m.group(req[0])
	if g == nil {
		return nil, fmt.Errorf("%w: %d", errNoGroup, req[0])
	}
	g.mu.Lock()
	h := g.handler
	g.mu.Unlock()
	if h == nil {
		return nil, fmt.Errorf("%w: %d (not serving yet)", errNoGroup, req[0])
	}
	return h(ctx, req[1:])
}

// groupTransport is one group's cluster.Transport over a Mux and, at
// once, its raft.StreamLayer.
type groupTransport struct {
	m        *Mux
	id       byte
	acceptCh chan net.Conn
	closed   chan struct{}
	once     sync.Once

	mu      sync.Mutex
	handler transport.Handler
}

var (
	_ cluster.Transport = (*groupTransport)(nil)
	_ raft.StreamLayer  = (*groupTransport)(nil)
)

func (g *groupTransport) Addr() net.Addr                    { return g.m.Addr() }
func (g *groupTransport) RaftStreamLayer() raft.StreamLayer { return g }

func (g *groupTransport) Serve(h transport.Handler) {
	g.mu.Lock()
	g.handler = h
	g.mu.Unlock()
}

func (g *groupTransport) Call(ctx context.Context, addr string, req []byte) ([]byte, error) {
	framed := make([]byte, 1+len(req))
	framed[0] = g.id
	copy(framed[1:], req)
	return g.m.tr.Call(ctx, addr, framed)
}

// Close stops this group's raft connections and RPCs; the shared
// listener stays up for the other groups.
func (g *groupTransport) Close() error {
	g.once.Do(func() {
		close(g.closed)
		g.m.mu.Lock()
		if g.m.groups[g.id] == g {
			delete(g.m.groups, g.id)
		}
		g.m.mu.Unlock()
	})
	return nil
}

// Accept implements net.Listener for raft's NetworkTransport.
func (g *groupTransport) Accept() (net.Conn, error) {
	select {
	case c := <-g.acceptCh:
		return c, nil
	case <-g.closed:
		return nil, errMuxClosed
	}
}

// Dial implements raft.StreamLayer: a raft connection of the shared
// transport, announcing the group with its first byte.
func (g *groupTransport) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	select {
	case <-g.closed:
		return nil, errMuxClosed
	default:
	}
	c, err := g.m.tr.RaftStreamLayer().Dial(address, timeout)
	if err != nil {
		return nil, err
	}
	if timeout > 0 {
		_ = c.SetWriteDeadline(time.Now().Add(timeout))
	}
	if _, err := c.Write([]byte{g.id}); err != nil {
		c.Close()
		return nil, fmt.Errorf("multiraft: group byte to %s: %w", address, err)
	}
	_ = c.SetWriteDeadline(time.Time{})
	return c, nil
}
