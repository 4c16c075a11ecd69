package transport

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// raftLayer is a raft.StreamLayer view of a Transport: accepted
// connections whose type byte is typ are queued for Accept; Dial opens
// connections that start with typ.
type raftLayer struct {
	t        *Transport
	typ      byte
	acceptCh chan net.Conn
	closed   chan struct{}
	once     sync.Once
}

var _ raft.StreamLayer = (*raftLayer)(nil)

func newRaftLayer(t *Transport, typ byte) *raftLayer {
	return &raftLayer{t: t, typ: typ, acceptCh: make(chan net.Conn), closed: make(chan struct{})}
}

// RaftStreamLayer returns the stream layer to give raft.NewNetworkTransport.
// Closing it (raft's NetworkTransport.Close does) stops raft connections
// only: Accept fails from then on and raft connections arriving later are
// refused, while RPC traffic carries on until the Transport is closed.
func (t *Transport) RaftStreamLayer() raft.StreamLayer { return t.raft }

// LeanRaftStreamLayer returns the stream layer of the lean raft framing,
// for NewLeanRaft: its connections start with their own type byte, so one
// listener serves raft's own transport and the lean one side by side
// (a rolling upgrade has both). Closing it stops lean connections only.
func (t *Transport) LeanRaftStreamLayer() raft.StreamLayer { return t.lean }

// handoff gives an accepted raft connection to Accept, or closes it if
// nobody will ever accept it.
func (l *raftLayer) handoff(c net.Conn) {
	select {
	case l.acceptCh <- c:
	case <-l.closed:
		c.Close()
	case <-l.t.ctx.Done():
		c.Close()
	}
}

// Accept implements net.Listener.
func (l *raftLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.acceptCh:
		return c, nil
	case <-l.closed:
		return nil, ErrClosed
	}
}

// Close implements net.Listener; see RaftStreamLayer.
func (l *raftLayer) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr implements net.Listener: the advertised address, which raft uses as
// this node's ServerAddress.
func (l *raftLayer) Addr() net.Addr { return l.t.addr }

// Dial implements raft.StreamLayer.
func (l *raftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	select {
	case <-l.closed:
		return nil, ErrClosed
	default:
	}
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	raw, conn, err := l.t.dial(ctx, string(address), l.typ)
	if err != nil {
		return nil, err
	}
	return &trackedConn{Conn: conn, t: l.t, raw: raw}, nil
}
