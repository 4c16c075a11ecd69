package redisbridge

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/internal/netguard"
	"github.com/locknode/locknode/redisbridge/resp"
)

// Sentinel errors of the package.
var (
	errClosed = errors.New("redisbridge: server closed")
)

// Server serves RESP clients over a Backend.
type Server struct {
	// panics counts commands that panicked (HandlerPanics).
	panics   atomic.Int64
	b        Backend
	async    asyncBackend // b, when it can propose without waiting; else nil
	grouper  asyncGrouper // b, when it groups pipelined writes; else nil
	cfg      Config
	lim      api.Limits // b's (api.LimitsOf): LOCK.* requests are validated with them
	rcfg     resp.Config
	commands map[string]*command
	users    *auth.Store // nil: no authentication

	hub   *hub
	trk   *tracker
	stats *cmdStats
	slow  *slowlog
	scans *scanCache
	// notify is notify-keyspace-events (notifyFlags), read on the apply
	// path without a lock; setNotify changes it under notifyMu, and
	// notifyDone ends the Backend's keyspace events (nil: not asked).
	notify     atomic.Uint32
	notifyMu   sync.Mutex
	notifyDone func()
	cancel     func() // Backend subscription

	tracer     trace.Tracer    // of cfg.TracerProvider; nil: not traced (trace.go)
	baseCtx    context.Context // cancelled by Close: ends blocking waits
	cancelBase context.CancelFunc

	nextID atomic.Int64

	perAddr *netguard.AddrLimiter // MaxConnsPerAddr
	refused netguard.RateLog      // log lines of refused connections

	mu        sync.Mutex
	listeners map[*netguard.Listener]struct{}
	serveErr  error // why a Serve ended other than by Close
	conns     map[*conn]struct{}
	closed    bool
	wg        sync.WaitGroup // connection goroutines
	started   time.Time

	members      memberCache // Config.Members, for the MOVED check
	cmdInfoState             // COMMAND's entries

	// limits are the table's (fsm.Config, the same on every node), read
	// once: MULTI refuses to queue past them.
	limits fsm.Config
}

// New returns a Server over b. It subscribes to b's applied events at
// once (for pub/sub delivery); Close ends the subscription.
func New(b Backend, cfg Config) (*Server, error) {
	if b == nil {
		return nil, errors.New("redisbridge: nil Backend")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Server{
		b:   b,
		cfg: cfg,
		rcfg: resp.Config{
			MaxArgs:         cfg.MaxArgs,
			MaxBulkBytes:    cfg.MaxBulkBytes,
			MaxCommandBytes: cfg.MaxRequestBytes,
		},
		hub:       newHub(),
		stats:     newCmdStats(),
		slow:      newSlowlog(cfg.SlowlogSlowerThan, cfg.SlowlogMaxLen),
		scans:     newScanCache(),
		trk:       newTracker(cfg.TrackingTableMaxKeys),
		tracer:    tracerOf(cfg.TracerProvider),
		listeners: make(map[*netguard.Listener]struct{}),
		perAddr:   netguard.NewAddrLimiter(max(cfg.MaxConnsPerAddr, 0)),
		refused:   netguard.RateLog{Every: netguard.LogEvery},
		conns:     make(map[*conn]struct{}),
		started:   time.Now(),
	}
	nf, _ := parseNotifyFlags(cfg.NotifyKeyspaceEvents) // Validate checked it
	s.setNotify(nf)
	s.users = cfg.Users
	if s.users == nil && cfg.Password != "" {
		s.users = auth.NewStoreFrom(auth.RequirePass(cfg.Password), nil)
	}
	s.async, _ = b.(asyncBackend)
	s.grouper, _ = b.(asyncGrouper)
	s.lim = api.LimitsOf(b)
	s.limits = fsm.DefaultConfig()
	_ = b.Read(context.Background(), true, func(t *fsm.Table, _ int64) { s.limits = t.Config() })
	s.commands = commandTable()
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	cancel := b.Subscribe(s.onApplied)
	s.cancel = cancel
	if d, ok := b.(commitDemander); ok {
		// Messages and invalidations reach this node's clients when it
		// applies them: a follower asks for each commit at once while a
		// client waits for them.
		remove := d.AddCommitDemand(func() bool { return s.trk.active.Load() > 0 || s.hub.active() })
		prev := s.cancel
		s.cancel = func() { remove(); prev() }
	}
	if d, ok := b.(changeDemander); ok {
		// Client-side caching invalidates a key whose lease a renewal
		// moved; a client counts in trk.active before its TRACKING ON is
		// answered, so the entries applied after it carry those changes.
		remove := d.AddChangeDemand(func() bool { return s.trk.active.Load() > 0 })
		prev := s.cancel
		s.cancel = func() { remove(); prev() }
	}
	return s, nil
}

// changeDemander is a Backend whose batches of renewals report their
// keys' changes only while asked to (cluster.Node.AddChangeDemand).
type changeDemander interface {
	AddChangeDemand(fn func() bool) (remove func())
}

// commitDemander is a Backend that can be told when this server's clients
// wait for entries other nodes commit (cluster.Node.AddCommitDemand).
type commitDemander interface {
	AddCommitDemand(fn func() bool) (remove func())
}

// Config returns the effective configuration (defaults filled in).
func (s *Server) Config() Config { return s.cfg }

// Addr returns the address of the first listener Serve was given, or
// Config.Addr before that.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ln := range s.listeners {
		return ln.Addr().String()
	}
	return s.cfg.Addr
}

// ListenAndServe listens on Config.Addr and serves until Close.
func (s *Server) ListenAndServe() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Serve accepts connections on ln until Close (it then returns nil). It
// closes ln when it returns. A failed accept (EMFILE, ENFILE, ...) is
// retried with a backoff and logged at WARN (netguard.Listener), so only
// Close, or ln closed by someone else, ends it; ListenerErr reports both
// a failing accept and a Serve that ended.
func (s *Server) Serve(ln net.Listener) error {
	gl := netguard.Listen(ln, "resp", s.cfg.Logger)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		gl.Close()
		return errClosed
	}
	s.listeners[gl] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, gl)
		s.mu.Unlock()
		gl.Close()
	}()
	for {
		nc, err := gl.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			s.mu.Lock()
			s.serveErr = err
			s.mu.Unlock()
			return err
		}
		release, ok := s.perAddr.Acquire(nc.RemoteAddr())
		if !ok {
			s.refuse(nc, msgMaxClientsAddr, "per_addr")
			continue
		}
		c := s.newConn(nc)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			release()
			nc.Close()
			continue
		}
		if len(s.conns) >= s.cfg.MaxConns {
			s.mu.Unlock()
			release()
			s.refuse(nc, msgMaxClients, "max_clients")
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		s.trk.addConn(c)
		// Ends when the client disconnects, sends QUIT, breaks the
		// protocol, or Close closes the connection.
		go func() {
			defer s.wg.Done()
			c.serve()
			release()
			s.trk.removeConn(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// refuse answers a connection over a cap with msg and closes it. The
// write cannot block the accept loop for long: a fresh connection's
// send buffer takes the line.
func (s *Server) refuse(nc net.Conn, msg, limit string) {
	if ok, suppressed := s.refused.Allow(); ok {
		s.cfg.Logger.Warn("refusing RESP connections over a connection cap", "limit", limit, "remote", nc.RemoteAddr().String(),
			"max_clients", s.cfg.MaxConns, "max_clients_per_addr", s.perAddr.Max(), "not_logged", suppressed)
	}
	nc.SetWriteDeadline(time.Now().Add(time.Second))
	nc.Write([]byte("-" + msg + "\r\n"))
	nc.Close()
}

// ListenerErr reports whether the server accepts connections: nil when
// every listener Serve was given accepts (and before Serve or after
// Close), else why not — accepts failing and being retried
// (netguard.ErrAcceptFailing, e.g. out of file descriptors), or a Serve
// that ended without Close (netguard.ErrStopped). For readiness checks.
func (s *Server) ListenerErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	if s.serveErr != nil {
		return fmt.Errorf("resp: %w: %w", netguard.ErrStopped, s.serveErr)
	}
	for ln := range s.listeners {
		if err := ln.Err(); err != nil {
			return fmt.Errorf("resp: %w", err)
		}
	}
	return nil
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close shuts the server down: it stops accepting, closes idle
// connections at once, cancels blocking waits (LOCK.ACQUIRE ... WAIT and
// WAIT reply "TRYAGAIN ... shutting down"), lets other in-flight commands
// finish and reply (each within RequestTimeout), then closes their
// connections. It returns when every
// connection goroutine has ended.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	for ln := range s.listeners {
		ln.Close()
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	s.cancelBase()
	for _, c := range conns {
		c.shutdown()
	}
	s.wg.Wait()
	s.cancel()
	s.stopNotify()
	return nil
}

// onApplied receives every applied entry's events (Backend.Subscribe): it
// must not block, so it only queues messages for subscribers and
// invalidations for tracking clients.
func (s *Server) onApplied(index uint64, events []fsm.Event) {
	s.trk.onApplied(index, events)
	nf := notifyFlags(s.notify.Load())
	if nf&(notifyKeyspace|notifyKeyevent) == 0 || !s.hub.active() {
		// Redis sends nothing without K or E; and no subscriber, no
		// channel names to build.
		nf = 0
	}
	for i := range events {
		switch ev := &events[i]; ev.Kind {
		case fsm.EvPublish:
			s.hub.publish(ev.Channel, ev.Message)
		case fsm.EvKeyspace:
			if nf != 0 {
				s.notifyKeyspace(nf, ev)
			}
		}
	}
}

// peers returns the live members' RESP addresses (at least this node's).
func (s *Server) peers(self string) []string {
	if s.cfg.Peers != nil {
		if p := s.cfg.Peers(); len(p) > 0 {
			return p
		}
	}
	return []string{self}
}

func runIDFor(nodeID string) string {
	h := sha1.Sum([]byte("locknode-run-id:" + nodeID))
	return hex.EncodeToString(h[:])
}

func sha1hex(b []byte) string {
	h := sha1.Sum(b)
	return hex.EncodeToString(h[:])
}

// HandlerPanics is how many commands panicked since the server started
// (each closed its connection; see conn.dispatchSafely). Always 0 unless
// the bridge has a bug.
func (s *Server) HandlerPanics() int64 { return s.panics.Load() }
