package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/internal/netguard"
)

// Errors callers branch on; use errors.Is.
var (
	// ErrConnLost: the connection carrying a call failed while the call was
	// in flight. The request may or may not have been executed.
	ErrConnLost = errors.New("transport: connection lost")
	// ErrRemote: the remote handler returned an error; its text follows.
	ErrRemote = errors.New("transport: remote error")
	// ErrClosed: the Transport (or its raft stream layer) is closed.
	ErrClosed = errors.New("transport: closed")
	// ErrTooLarge: a request or response exceeds MaxFrameSize.
	ErrTooLarge = errors.New("transport: frame too large")
	// ErrProtocol: a peer sent bytes that are not a valid frame.
	ErrProtocol = errors.New("transport: protocol error")
	// ErrNotPeer: the address answered, but not in the peer protocol: it
	// is another service's port (a *NotPeerError says which, if it can).
	ErrNotPeer = errors.New("transport: not a peer port")
)

// Connection types: the first byte of every new connection.
const (
	typeRaft byte = 0x01
	typeRPC  byte = 0x02
	// typeRaftLean: raft's RPCs in the lean framing (raftwire.go). A
	// release without it closes such a connection as an unknown type, so
	// a node dials it only once every member understands it (the
	// cluster package gates it on the cluster version).
	typeRaftLean byte = 0x03
)

const (
	// TCP keepalive on every TCP connection we dial or accept: a peer whose
	// host vanished without a RST is detected within idle + interval*count.
	keepAliveIdle     = 5 * time.Second
	keepAliveInterval = 5 * time.Second
	keepAliveCount    = 3
)

// Config configures a Transport. The zero value of every optional field
// means its default.
type Config struct {
	// BindAddr is the TCP address to listen on, e.g. "127.0.0.1:0".
	// Ignored when Listener is set.
	BindAddr string
	// Advertise is the "host:port" peers use to reach this node; it is what
	// Addr and the raft stream layer report. Default: the listener's
	// address, which must then not be unspecified (0.0.0.0 / ::).
	Advertise string
	// Listener, when set, is used instead of listening on BindAddr (tests,
	// fault injection). The Transport owns it and closes it on Close.
	Listener net.Listener
	// Dial opens outgoing connections (raft and RPC). Default: a net.Dialer.
	// Tests wrap connections here to drop, delay or partition traffic.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// ServerTLS, when set, makes every accepted connection TLS. The
	// handshake comes first and the type byte travels inside TLS, so raft
	// and RPC still share one port and nothing is read from a peer that
	// failed the handshake. Set ClientAuth for mutual TLS; RPC handlers
	// then learn the peer's certificate from PeerCertificate.
	ServerTLS *tls.Config
	// ClientTLS, when set, makes every outgoing connection TLS. An empty
	// ServerName is filled with the host of the dialed address.
	ClientTLS *tls.Config
	// Logger receives connection-level events. Default: a null logger.
	Logger hclog.Logger
	// CallTimeout is Call's deadline when its ctx has none, and the write
	// deadline of each batch of frames. Default 10s.
	CallTimeout time.Duration
	// HandshakeTimeout bounds how long an accepted connection may take to
	// send its type byte, finish a TLS handshake and deliver its first
	// complete request (an RPC frame, or a raft request the node has
	// answered). A first request larger than 1 MiB (a snapshot, a large
	// batch of entries) may take longer, as long as every read of it
	// returns data within HandshakeTimeout. A connection that stays silent
	// or stalls is closed; later requests on it are not timed (raft keeps
	// idle connections). Default 10s.
	HandshakeTimeout time.Duration
	// MaxConns bounds the accepted connections open at once (raft and RPC,
	// from every peer); one past it is closed at once and its peer
	// redials. Default 1024: a member opens a few (raft's pool, its
	// heartbeat connection, MaxConnsPerPeer RPC connections).
	MaxConns int
	// MaxConnsPerPeer is how many RPC connections Call keeps per peer;
	// concurrent calls are pipelined over them. More connections spread
	// large requests; fewer batch better. Default 2.
	MaxConnsPerPeer int
}

// DefaultConfig returns a Config that listens on an ephemeral loopback port.
func DefaultConfig() Config {
	return Config{
		BindAddr:         "127.0.0.1:0",
		Logger:           hclog.NewNullLogger(),
		CallTimeout:      10 * time.Second,
		HandshakeTimeout: DefaultHandshakeTimeout,
		MaxConns:         DefaultMaxConns,
		MaxConnsPerPeer:  2,
	}
}

// Defaults of the peer-port limits.
const (
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultMaxConns         = 1024
)

// Validate reports a configuration New would reject.
func (c Config) Validate() error {
	if c.Listener == nil {
		if c.BindAddr == "" {
			return errors.New("transport: BindAddr or Listener is required")
		}
		if _, _, err := net.SplitHostPort(c.BindAddr); err != nil {
			return fmt.Errorf("transport: BindAddr %q: %w", c.BindAddr, err)
		}
	}
	if c.Advertise != "" {
		if err := checkAdvertise(c.Advertise); err != nil {
			return err
		}
	}
	if c.CallTimeout < 0 {
		return fmt.Errorf("transport: CallTimeout %v is negative", c.CallTimeout)
	}
	if c.MaxConnsPerPeer < 0 {
		return fmt.Errorf("transport: MaxConnsPerPeer %d is negative", c.MaxConnsPerPeer)
	}
	if c.HandshakeTimeout < 0 {
		return fmt.Errorf("transport: HandshakeTimeout %v is negative", c.HandshakeTimeout)
	}
	if c.MaxConns < 0 {
		return fmt.Errorf("transport: MaxConns %d is negative", c.MaxConns)
	}
	return nil
}

func checkAdvertise(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("transport: advertise address %q: %w", a, err)
	}
	if host == "" || port == "" || port == "0" {
		return fmt.Errorf("transport: advertise address %q needs a host and a non-zero port", a)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("transport: advertise address %q is unspecified; set Advertise", a)
	}
	return nil
}

func (c *Config) setDefaults() {
	d := DefaultConfig()
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = d.CallTimeout
	}
	if c.MaxConnsPerPeer == 0 {
		c.MaxConnsPerPeer = d.MaxConnsPerPeer
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = d.HandshakeTimeout
	}
	if c.MaxConns == 0 {
		c.MaxConns = d.MaxConns
	}
	if c.Dial == nil {
		var dialer net.Dialer
		c.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
			return dialer.DialContext(ctx, "tcp", addr)
		}
	}
}

// advertiseAddr is the net.Addr Addr returns; it keeps the configured
// spelling (a host name stays a host name).
type advertiseAddr string

func (a advertiseAddr) Network() string { return "tcp" }
func (a advertiseAddr) String() string  { return string(a) }

// Transport is one node's endpoint: a single listener shared by raft and
// RPC traffic, and a pool of outgoing RPC connections.
type Transport struct {
	cfg    Config
	log    hclog.Logger
	ln     *netguard.Listener // retries failed accepts (EMFILE...) with a backoff
	addr   advertiseAddr
	raft   *raftLayer
	lean   *raftLayer      // typeRaftLean connections
	ctx    context.Context // cancelled by Close; parent of every connection's context
	cancel context.CancelFunc

	handler atomic.Pointer[Handler]
	served  chan struct{} // closed by the first Serve
	serveMu sync.Once

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{} // every raw connection open, so Close can cut them all
	in     map[net.Conn]struct{} // the accepted ones among them (MaxConns)
	peers  map[string]*peer
	wg     sync.WaitGroup // every goroutine the Transport starts

	closeOnce sync.Once
	closeErr  error

	refused     atomic.Int64 // connections refused past MaxConns since the last warning
	lastRefusal atomic.Int64 // unix nanoseconds of that warning
}

// New listens (unless cfg.Listener is set) and starts accepting connections.
// RPC requests are answered once Serve installs a handler.
func New(cfg Config) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	ln := cfg.Listener
	if ln == nil {
		var err error
		ln, err = net.Listen("tcp", cfg.BindAddr)
		if err != nil {
			return nil, fmt.Errorf("transport: listen on %s: %w", cfg.BindAddr, err)
		}
	}
	adv := cfg.Advertise
	if adv == "" {
		adv = ln.Addr().String()
		if err := checkAdvertise(adv); err != nil {
			ln.Close()
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &Transport{
		cfg:    cfg,
		log:    cfg.Logger,
		ln:     netguard.Listen(ln, "peer", cfg.Logger),
		addr:   advertiseAddr(adv),
		ctx:    ctx,
		cancel: cancel,
		served: make(chan struct{}),
		conns:  make(map[net.Conn]struct{}),
		in:     make(map[net.Conn]struct{}),
		peers:  make(map[string]*peer),
	}
	t.raft = newRaftLayer(t, typeRaft)
	t.lean = newRaftLayer(t, typeRaftLean)
	// Ends when the listener is closed by Close.
	t.spawn(t.acceptLoop)
	t.log.Debug("transport listening", "addr", ln.Addr().String(), "advertise", adv)
	return t, nil
}

// ListenerErr reports whether the peer port accepts connections: nil
// when it does (or after Close), else why not — accepts failing and
// retried (netguard.ErrAcceptFailing, e.g. out of file descriptors), or
// the listener closed underneath (netguard.ErrStopped). For readiness
// checks.
func (t *Transport) ListenerErr() error {
	if err := t.ln.Err(); err != nil {
		return fmt.Errorf("peer: %w", err)
	}
	return nil
}

// Addr returns the advertised address.
func (t *Transport) Addr() net.Addr { return t.addr }

// Serve installs the RPC handler. Requests that arrived earlier wait for it
// (until their caller gives up or the connection closes). Calling Serve
// again replaces the handler for later requests; a nil h is ignored.
func (t *Transport) Serve(h Handler) {
	if h == nil {
		return
	}
	t.handler.Store(&h)
	t.serveMu.Do(func() { close(t.served) })
}

// Close stops the listener and the raft stream layer, closes every
// connection and waits for every goroutine the Transport started. In-flight
// Calls fail with an error wrapping both ErrClosed and ErrConnLost; handlers
// see their ctx cancelled and must return for Close to return. Close is
// idempotent.
func (t *Transport) Close() error {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.closed = true
		conns := make([]net.Conn, 0, len(t.conns))
		for c := range t.conns {
			conns = append(conns, c)
		}
		t.mu.Unlock()
		t.cancel()
		if err := t.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			t.closeErr = fmt.Errorf("transport: close listener: %w", err)
		}
		t.raft.Close()
		t.lean.Close()
		for _, c := range conns {
			c.Close()
		}
		t.log.Debug("transport closing", "conns", len(conns))
	})
	t.wg.Wait()
	return t.closeErr
}

// spawn runs f in a goroutine counted by t.wg, unless the Transport is
// closed (then it reports false and f does not run). The caller's comment
// says how f ends.
func (t *Transport) spawn(f func()) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.wg.Add(1)
	go func() { // ends when f returns (see the caller)
		defer t.wg.Done()
		f()
	}()
	return true
}

// track records a raw connection so Close can cut it; false once closed.
func (t *Transport) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.conns[c] = struct{}{}
	return true
}

func (t *Transport) untrack(c net.Conn) {
	t.mu.Lock()
	delete(t.conns, c)
	delete(t.in, c)
	t.mu.Unlock()
}

// lostErr is the error a call fails with when its connection breaks.
func (t *Transport) lostErr(cause error) error {
	if t.ctx.Err() != nil {
		return fmt.Errorf("%w: %w", ErrClosed, ErrConnLost)
	}
	if errors.Is(cause, ErrNotPeer) {
		// Callers branch on it: retrying that address is of no use.
		return fmt.Errorf("%w: %w", ErrConnLost, cause)
	}
	return fmt.Errorf("%w: %v", ErrConnLost, cause)
}

func (t *Transport) acceptLoop() {
	for {
		// A failed accept (EMFILE, an injected fault) is retried inside
		// with a backoff, as net/http does; an error here means the
		// listener is closed (by Close, or underneath: ListenerErr).
		conn, err := t.ln.Accept()
		if err != nil {
			return
		}
		ok, full := t.trackAccepted(conn)
		if full {
			t.refuse(conn)
			continue
		}
		if !ok {
			conn.Close()
			return
		}
		// Ends when the connection has been handed to raft, or when the RPC
		// connection closes (peer gone, protocol error, or Close).
		if !t.spawn(func() { t.handleConn(conn) }) {
			t.untrack(conn)
			conn.Close()
			return
		}
	}
}

// handleConn does the TLS handshake of an accepted connection (if
// configured), reads its type byte and dispatches it.
func (t *Transport) handleConn(raw net.Conn) {
	remote := raw.RemoteAddr().String()
	accepted := time.Now()
	setKeepAlive(raw)
	conn, typ, err := t.serverHandshake(raw)
	if err != nil {
		t.log.Warn("dropping connection: handshake failed", "remote", remote, "error", err)
		t.untrack(raw)
		raw.Close()
		return
	}
	if typ == typeRaftLean {
		// Acknowledge the type byte: a dialer that gets no
		// acknowledgement before the connection closes knows it reached a
		// release without the lean framing (ErrLeanRefused), whatever
		// becomes of this connection later (a node going down closes it
		// after the acknowledgement).
		if err := ackLean(raw, conn, t.cfg.HandshakeTimeout); err != nil {
			t.log.Warn("dropping connection", "remote", remote, "error", err)
			t.untrack(raw)
			raw.Close()
			return
		}
	}
	if typ == typeRaft || typ == typeRaftLean || typ == typeRPC {
		conn, err = t.awaitFirstRequest(raw, conn, typ, accepted)
		if err != nil {
			t.log.Warn("dropping connection", "remote", remote, "error", err)
			t.untrack(raw)
			raw.Close()
			return
		}
	}
	switch typ {
	case typeRaft:
		t.raft.handoff(&trackedConn{Conn: conn, t: t, raw: raw})
	case typeRaftLean:
		t.lean.handoff(&trackedConn{Conn: conn, t: t, raw: raw})
	case typeRPC:
		t.serveRPC(raw, conn)
	default:
		t.log.Warn("dropping connection: unknown type byte", "remote", remote, "type", typ)
		t.untrack(raw)
		raw.Close()
	}
}

func (t *Transport) serverHandshake(raw net.Conn) (net.Conn, byte, error) {
	if err := raw.SetDeadline(time.Now().Add(t.cfg.HandshakeTimeout)); err != nil {
		return nil, 0, err
	}
	// With TLS the handshake comes first, so a peer without a
	// certificate from the CA is refused before any byte of ours is read.
	conn := raw
	if t.cfg.ServerTLS != nil {
		tc := tls.Server(raw, t.cfg.ServerTLS)
		if err := tc.HandshakeContext(t.ctx); err != nil {
			return nil, 0, fmt.Errorf("tls: %w", err)
		}
		conn = tc
	}
	var b [1]byte
	if _, err := io.ReadFull(conn, b[:]); err != nil {
		return nil, 0, fmt.Errorf("read type byte: %w", err)
	}
	if b[0] != typeRaft && b[0] != typeRaftLean && b[0] != typeRPC {
		return conn, b[0], nil // dispatched (and refused) by the caller
	}
	if err := raw.SetDeadline(time.Time{}); err != nil {
		return nil, 0, err
	}
	return conn, b[0], nil
}

// ackLean writes the acknowledgement of a lean raft connection's type
// byte (the byte itself), within timeout.
func ackLean(raw, conn net.Conn, timeout time.Duration) error {
	if err := raw.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if _, err := conn.Write([]byte{typeRaftLean}); err != nil {
		return fmt.Errorf("acknowledge lean raft: %w", err)
	}
	return raw.SetWriteDeadline(time.Time{})
}

// dial opens an outgoing connection of the given type: dial, TLS if
// configured, then the type byte. It returns the raw connection (tracked; Close
// cuts it) and the one to use.
func (t *Transport) dial(ctx context.Context, addr string, typ byte) (raw, conn net.Conn, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(t.ctx, cancel) // Close aborts dials in progress
	defer stop()

	raw, err = t.cfg.Dial(ctx, addr)
	if err != nil {
		if t.ctx.Err() != nil {
			return nil, nil, ErrClosed
		}
		return nil, nil, fmt.Errorf("transport: dial %s: %w", addr, err)
	}
	if !t.track(raw) {
		raw.Close()
		return nil, nil, ErrClosed
	}
	fail := func(err error) (net.Conn, net.Conn, error) {
		t.untrack(raw)
		raw.Close()
		if t.ctx.Err() != nil {
			return nil, nil, ErrClosed
		}
		return nil, nil, fmt.Errorf("transport: dial %s: %w", addr, err)
	}
	setKeepAlive(raw)
	if dl, ok := ctx.Deadline(); ok {
		if err := raw.SetDeadline(dl); err != nil {
			return fail(err)
		}
	}
	conn = raw
	if t.cfg.ClientTLS != nil {
		cfg := t.cfg.ClientTLS
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			if host, _, err := net.SplitHostPort(addr); err == nil {
				cfg.ServerName = host
			}
		}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fail(fmt.Errorf("tls: %w", err))
		}
		conn = tc
	}
	if _, err := conn.Write([]byte{typ}); err != nil {
		return fail(err)
	}
	if err := raw.SetDeadline(time.Time{}); err != nil {
		return fail(err)
	}
	return raw, conn, nil
}

func setKeepAlive(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetKeepAliveConfig(net.KeepAliveConfig{
			Enable: true, Idle: keepAliveIdle, Interval: keepAliveInterval, Count: keepAliveCount,
		})
	}
}

// trackedConn is a connection handed to raft: closing it also forgets it.
type trackedConn struct {
	net.Conn
	t    *Transport
	raw  net.Conn
	once sync.Once
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.t.untrack(c.raw) })
	return err
}
