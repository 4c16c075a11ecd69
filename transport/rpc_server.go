package transport

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
)

// Handler answers one RPC request. ctx is cancelled when the connection
// closes, when the caller gives up, or when the Transport closes; a handler
// must then return promptly (Close waits for it). The request slice is the
// handler's to keep. A returned error reaches the caller as ErrRemote with
// err.Error() as its text.
type Handler func(ctx context.Context, req []byte) ([]byte, error)

type peerKey struct{}

type peerInfo struct {
	cert    *x509.Certificate
	secured bool
	remote  string
}

// PeerCertificate tells an RPC handler who sent the request: secured is
// true when the connection is TLS, and cert is then the certificate the
// peer presented (verified against ServerTLS.ClientCAs when the server
// requires one), or nil if it presented none. Without TLS both are zero:
// the peer is unknown.
func PeerCertificate(ctx context.Context) (cert *x509.Certificate, secured bool) {
	p, _ := ctx.Value(peerKey{}).(peerInfo)
	return p.cert, p.secured
}

// PeerAddr is the remote address of the connection an RPC handler's
// request came on ("" outside a handler), for the audit log.
func PeerAddr(ctx context.Context) string {
	p, _ := ctx.Value(peerKey{}).(peerInfo)
	return p.remote
}

// serverConn is the accepting side of one RPC connection.
type serverConn struct {
	t      *Transport
	raw    net.Conn
	conn   net.Conn
	w      *frameWriter
	ctx    context.Context // cancelled when the connection ends
	cancel context.CancelFunc

	mu       sync.Mutex
	inflight map[uint64]context.CancelFunc
}

// serveRPC runs the read loop of an accepted RPC connection until it
// fails; every request is handled in its own goroutine.
func (t *Transport) serveRPC(raw, conn net.Conn) {
	ctx, cancel := context.WithCancel(t.ctx)
	inner := conn
	if hc, ok := conn.(*handshakeConn); ok {
		inner = hc.Conn
	}
	p := peerInfo{remote: raw.RemoteAddr().String()}
	if tc, ok := inner.(*tls.Conn); ok {
		p.secured = true
		if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
			p.cert = certs[0]
		}
	}
	ctx = context.WithValue(ctx, peerKey{}, p)
	s := &serverConn{
		t: t, raw: raw, conn: conn,
		w:        newFrameWriter(conn, t.cfg.CallTimeout),
		ctx:      ctx,
		cancel:   cancel,
		inflight: make(map[uint64]context.CancelFunc),
	}
	remote := raw.RemoteAddr().String()
	defer func() {
		cancel()
		t.untrack(raw)
		conn.Close()
	}()
	// Ends when the connection's ctx is cancelled (read loop ended or Close)
	// or a write fails (then it closes the connection, ending the read loop).
	if !t.spawn(func() {
		if err := s.w.run(ctx.Done()); err != nil {
			t.log.Debug("rpc write failed; closing connection", "remote", remote, "error", err)
			conn.Close()
		}
	}) {
		return
	}
	r := bufio.NewReaderSize(conn, 64<<10)
	var hdr [frameHeader]byte
	for first := true; ; first = false {
		f, err := readFrame(r, &hdr, MaxFrameSize)
		if err != nil {
			s.logReadErr(remote, err)
			return
		}
		if first {
			endHandshake(conn) // a whole frame: later ones may come at any time
		}
		switch f.kind {
		case kindRequest:
			if !s.start(f) {
				t.log.Warn("dropping rpc connection: duplicate request id", "remote", remote, "id", f.id)
				return
			}
		case kindCancel:
			s.mu.Lock()
			if c := s.inflight[f.id]; c != nil {
				c()
			}
			s.mu.Unlock()
		default:
			t.log.Warn("dropping rpc connection: unexpected frame", "remote", remote, "kind", f.kind.String())
			return
		}
	}
}

func (s *serverConn) logReadErr(remote string, err error) {
	switch {
	case s.ctx.Err() != nil, errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		s.t.log.Debug("rpc connection closed", "remote", remote, "error", err)
	case errors.Is(err, ErrProtocol):
		s.t.log.Warn("dropping rpc connection: bad frame", "remote", remote, "error", err)
	default:
		s.t.log.Debug("rpc connection failed", "remote", remote, "error", err)
	}
}

// start launches the handler goroutine for one request; false if the id is
// already in flight (a broken peer).
func (s *serverConn) start(f frame) bool {
	ctx, cancel := context.WithCancel(s.ctx)
	s.mu.Lock()
	if _, dup := s.inflight[f.id]; dup {
		s.mu.Unlock()
		cancel()
		return false
	}
	s.inflight[f.id] = cancel
	s.mu.Unlock()
	// The read loop holds a t.wg count, so this Add cannot race Close's Wait
	// at zero. Ends when the handler returns; handlers return once ctx is
	// cancelled (connection closed, caller gave up, or Transport closed).
	s.t.wg.Add(1)
	go func() {
		defer s.t.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.inflight, f.id)
			s.mu.Unlock()
			cancel()
		}()
		resp, err := s.t.handle(ctx, f.body)
		if ctx.Err() != nil && err != nil {
			return // nobody is listening for this answer any more
		}
		switch {
		case err != nil:
			s.w.send(kindError, f.id, []byte(err.Error()))
		case len(resp) > MaxFrameSize:
			s.w.send(kindError, f.id, []byte(fmt.Sprintf("%v: response of %d bytes", ErrTooLarge, len(resp))))
		default:
			s.w.send(kindResponse, f.id, resp)
		}
	}()
	return true
}

// handle waits for Serve, then runs the handler, turning a panic into an
// error so one bad request cannot take the node down.
func (t *Transport) handle(ctx context.Context, req []byte) (resp []byte, err error) {
	select {
	case <-t.served:
	case <-ctx.Done():
		return nil, fmt.Errorf("transport: no handler installed: %w", ctx.Err())
	}
	h := *t.handler.Load()
	defer func() {
		if p := recover(); p != nil {
			t.log.Error("rpc handler panicked", "panic", p, "stack", string(debug.Stack()))
			resp, err = nil, fmt.Errorf("transport: handler panicked: %v", p)
		}
	}()
	return h(ctx, req)
}
