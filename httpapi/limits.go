package httpapi

import (
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
	}
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
// once. One accepted past the cap is answered at once with 503
// too_many_connections (Retry-After: 1) and closed, instead of waiting
// unanswered in the accept queue: a client (the Go client does) then
// tries another node, which may have room, rather than hanging until its
// own timeout while long polls hold the slots here.
func LimitListener(ln net.Listener, cfg Config) net.Listener {
	cfg = cfg.withDefaults()
	return &limitListener{Listener: ln, max: int64(cfg.MaxConns), log: cfg.Logger}
}

// Refusals in progress at once; past this, a refused connection is
// closed without an answer (a flood must not pile up goroutines).
const maxRefusing = 64

// refuseTimeout bounds answering one refused connection.
const refuseTimeout = time.Second

type limitListener struct {
	net.Listener
	max      int64
	open     atomic.Int64
	refusing atomic.Int64
	refused  atomic.Int64 // since the last log line
	lastLog  atomic.Int64 // unix nanoseconds
	log      hclog.Logger
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.refuse(c)
	}
}

func (l *limitListener) refuse(c net.Conn) {
	l.refused.Add(1)
	if now := time.Now().UnixNano(); now-l.lastLog.Load() > int64(10*time.Second) {
		l.lastLog.Store(now)
		l.log.Warn("refusing HTTP connections: at the connection limit", "max_conns", l.max, "refused", l.refused.Swap(0))
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
		if _, err := c.Write(overCapacityAnswer(l.max)); err != nil {
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
func overCapacityAnswer(max int64) []byte {
	body, _ := AppendJSON(nil, &api.ErrorBody{
		Code:    CodeTooManyConns,
		Message: fmt.Sprintf("%v: %d open", ErrTooManyConns, max),
	})
	body = append(body, '\n')
	return []byte("HTTP/1.1 503 Service Unavailable\r\n" +
		"Content-Type: " + ContentTypeJSON + "\r\n" +
		"Retry-After: 1\r\n" +
		"Connection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + string(body))
}

// limitConn gives its slot back on the first Close.
type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}
