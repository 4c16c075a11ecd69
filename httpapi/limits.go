package httpapi

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/internal/netguard"
	"github.com/locknode/locknode/wire"
)

// NewServer returns the http.Server for h (the handler New returns) with
// cfg's header, idle and header-size limits. It sets no ReadTimeout or
// WriteTimeout: a blocking acquire long-polls up to api.MaxWait, and the
// body's own deadline (Config.BodyTimeout) is set by the handler. Serve it
// on LimitListener(ln, cfg) for the connection cap.
func NewServer(h http.Handler, cfg Config) *http.Server {
	cfg = cfg.withDefaults()
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cfg.HeaderTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ConnContext:       withConnState,
	}
}

// connState is what the handlers keep per connection: the failed
// authentications on it (auth.Throttle counts them per connection).
type connState struct {
	authFails atomic.Int32
}

type connStateKey struct{}

// withConnState is http.Server.ConnContext: a fresh connState per
// connection.
func withConnState(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connStateKey{}, new(connState))
}

// connStateOf is r's connection's state; nil on a server NewServer did
// not build (each request then counts as its own connection).
func connStateOf(r *http.Request) *connState {
	cs, _ := r.Context().Value(connStateKey{}).(*connState)
	return cs
}

// setReadDeadline sets the read deadline of w's connection (a zero t
// clears it). A ResponseWriter that cannot (a test recorder) is left
// alone.
func setReadDeadline(w http.ResponseWriter, t time.Time) {
	// net/http's own writer first: no ResponseController allocation on
	// the hot routes.
	if d, ok := w.(interface{ SetReadDeadline(time.Time) error }); ok {
		_ = d.SetReadDeadline(t)
		return
	}
	_ = http.NewResponseController(w).SetReadDeadline(t)
}

// LimitListener returns ln with at most cfg.MaxConns connections open at
// once, and at most cfg.MaxConnsPerAddr from one source IP. One accepted
// past a cap is answered at once with 503 too_many_connections
// (Retry-After: 1) and closed, instead of waiting unanswered in the
// accept queue: a client (the Go client does) then tries another node,
// which may have room, rather than hanging until its own timeout while
// long polls hold the slots here. A failed accept (EMFILE, ENFILE, ...)
// is retried with a backoff and logged at WARN (netguard.Listener), so
// http.Server.Serve over it ends only when the listener is closed.
func LimitListener(ln net.Listener, cfg Config) *LimitedListener {
	cfg = cfg.withDefaults()
	return &LimitedListener{
		g:       netguard.Listen(ln, "http", cfg.Logger),
		max:     int64(cfg.MaxConns),
		perAddr: netguard.NewAddrLimiter(max(cfg.MaxConnsPerAddr, 0)),
		log:     cfg.Logger,
		rl:      netguard.RateLog{Every: netguard.LogEvery},
	}
}

// Refusals in progress at once; past this, a refused connection is
// closed without an answer (a flood must not pile up goroutines).
const maxRefusing = 64

// refuseTimeout bounds answering one refused connection.
const refuseTimeout = time.Second

// LimitedListener is LimitListener's listener.
type LimitedListener struct {
	g        *netguard.Listener
	max      int64
	perAddr  *netguard.AddrLimiter
	open     atomic.Int64
	refusing atomic.Int64
	rl       netguard.RateLog
	log      hclog.Logger
}

// Addr is the listener's address.
func (l *LimitedListener) Addr() net.Addr { return l.g.Addr() }

// Close closes the listener (an Accept waiting out a backoff returns at
// once).
func (l *LimitedListener) Close() error { return l.g.Close() }

// Err reports whether the listener accepts connections (nil), or why not:
// accepts failing and retried (netguard.ErrAcceptFailing), or ended
// because the listener was closed underneath (netguard.ErrStopped). For
// readiness checks.
func (l *LimitedListener) Err() error {
	if err := l.g.Err(); err != nil {
		return fmt.Errorf("http: %w", err)
	}
	return nil
}

// Accept returns the next connection within the caps.
func (l *LimitedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.g.Accept()
		if err != nil {
			return nil, err
		}
		release, ok := l.perAddr.Acquire(c.RemoteAddr())
		if !ok {
			l.refuse(c, fmt.Sprintf("%v: %d open from this address", wire.ErrTooManyConns, l.perAddr.Max()), "per_addr")
			continue
		}
		if l.open.Add(1) <= l.max {
			return &limitConn{Conn: c, l: l, release: release}, nil
		}
		l.open.Add(-1)
		release()
		l.refuse(c, fmt.Sprintf("%v: %d open", wire.ErrTooManyConns, l.max), "max_conns")
	}
}

func (l *LimitedListener) refuse(c net.Conn, msg, limit string) {
	if ok, suppressed := l.rl.Allow(); ok {
		l.log.Warn("refusing HTTP connections over a connection cap", "limit", limit, "remote", c.RemoteAddr().String(),
			"max_conns", l.max, "max_conns_per_addr", l.perAddr.Max(), "not_logged", suppressed)
	}
	if l.refusing.Add(1) > maxRefusing {
		l.refusing.Add(-1)
		c.Close()
		return
	}
	// Ends within refuseTimeout (the deadline below).
	go func() {
		defer l.refusing.Add(-1)
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(refuseTimeout))
		if _, err := c.Write(overCapacityAnswer(msg)); err != nil {
			return
		}
		// Half-close, then read what the client sent until it closes: a
		// close with unread input would reset the connection, and the
		// client could lose the answer.
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}()
}

// overCapacityAnswer is the whole HTTP response a refused connection gets.
func overCapacityAnswer(msg string) []byte {
	body, _ := wire.AppendJSON(nil, &api.ErrorBody{
		Code:    wire.CodeTooManyConns,
		Message: msg,
	})
	body = append(body, '\n')
	return []byte("HTTP/1.1 503 Service Unavailable\r\n" +
		"Content-Type: " + wire.ContentTypeJSON + "\r\n" +
		"Retry-After: 1\r\n" +
		"Connection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + string(body))
}

// limitConn gives its slots back on the first Close.
type limitConn struct {
	net.Conn
	l       *LimitedListener
	release func() // the per-address slot
	once    sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.open.Add(-1)
		c.release()
	})
	return err
}
