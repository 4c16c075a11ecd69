package client

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// h1Transport is the default client's RoundTripper for plain http://
// endpoints: HTTP/1.1 with keep-alive, one request at a time per
// connection, written and read by the calling goroutine itself.
//
// net/http's Transport hands every request to a writer goroutine and
// every answer back from a reader goroutine of the connection, and keeps
// per-request bookkeeping for features a lock client does not use
// (HTTP/2, proxies, 1xx hooks, alternate protocols). Measured on the
// 64-worker lock cycle, the client's CPU per cycle was more than twice
// that of the RESP client doing the same work (see BenchmarkHTTPCycle).
// Here a request costs one write and the reads of its answer, like a
// Redis client's command.
//
// Requests it does not handle go to fallback: https unless the client was
// given a TLS configuration (Config.TLS), a proxy configured in the
// environment, a request that asks for a protocol upgrade.
type h1Transport struct {
	fallback http.RoundTripper
	dialer   net.Dialer
	maxIdle  int         // idle connections kept per host
	tls      *tls.Config // when set, https:// is handled too, with it

	mu   sync.Mutex
	idle map[string][]*h1Conn // by scheme and host:port (poolKey), most recently used last

	staleAfter time.Duration // staleCheckAfter; tests lower it
}

func newH1Transport(fallback http.RoundTripper, maxIdlePerHost int) *h1Transport {
	return &h1Transport{
		fallback: fallback,
		dialer:   net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		maxIdle:  maxIdlePerHost,
		idle:     map[string][]*h1Conn{},

		staleAfter: staleCheckAfter,
	}
}

// CloseIdleConnections closes every pooled connection (http.Client calls
// it from its own CloseIdleConnections).
func (t *h1Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = map[string][]*h1Conn{}
	t.mu.Unlock()
	for _, cs := range idle {
		for _, pc := range cs {
			pc.c.Close()
		}
	}
	if ci, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

type h1Conn struct {
	c    net.Conn
	br   *bufio.Reader
	bw   *bufio.Writer
	key  string    // its pool (poolKey)
	idle time.Time // when it was pooled
}

// staleCheckAfter: a pooled connection idle at least this long is looked
// at (connAlive) before a request is sent on it. One idle for less was
// in use a moment ago; checking every reuse would cost a syscall per
// request (~5 µs of CPU per cycle measured) for the rare server that
// closes a connection it just answered on, which the locknode client's
// own retries cover.
const staleCheckAfter = 100 * time.Millisecond

// errStaleConn marks a pooled connection the server had closed while it
// was idle, found before the request was sent (or, for a request that
// may be sent twice, before any byte of the answer arrived).
var errStaleConn = errors.New("client: pooled connection closed by the server")

func (t *h1Transport) handles(req *http.Request) bool {
	if (req.URL.Scheme != "http" && (req.URL.Scheme != "https" || t.tls == nil)) ||
		req.URL.User != nil || req.Header.Get("Upgrade") != "" {
		return false
	}
	p, err := http.ProxyFromEnvironment(req)
	return err == nil && p == nil
}

// RoundTrip implements http.RoundTripper.
func (t *h1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.handles(req) {
		return t.fallback.RoundTrip(req)
	}
	addr := req.URL.Host
	secure := req.URL.Scheme == "https"
	if req.URL.Port() == "" {
		port := "80"
		if secure {
			port = "443"
		}
		addr = net.JoinHostPort(req.URL.Hostname(), port)
	}
	ctx := req.Context()
	for try := 0; ; try++ {
		pc, reused, err := t.get(ctx, addr, secure, try == 0)
		if err != nil {
			closeReqBody(req)
			return nil, err
		}
		resp, err := t.exchange(ctx, pc, req, reused)
		if err == nil {
			return resp, nil
		}
		// A stale pooled connection: the request was not sent, or may be
		// sent twice (exchange decides): send it again on a new
		// connection, as net/http does. The server closed the others
		// pooled with it too, most likely (it restarted, or timed them
		// out as idle): drop them.
		if errors.Is(err, errStaleConn) && try == 0 && ctx.Err() == nil {
			t.dropIdle(pc.key)
			if req.Body == nil || req.Body == http.NoBody {
				continue
			}
			if req.GetBody != nil {
				if body, gerr := req.GetBody(); gerr == nil {
					r2 := *req
					r2.Body = body
					req = &r2
					continue
				}
			}
		}
		closeReqBody(req)
		return nil, err
	}
}

func closeReqBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// get returns a pooled connection to addr (when pooled is true and there
// is one), or dials one.
func (t *h1Transport) get(ctx context.Context, addr string, secure, pooled bool) (pc *h1Conn, reused bool, err error) {
	key := poolKey(addr, secure)
	if pooled {
		t.mu.Lock()
		if cs := t.idle[key]; len(cs) > 0 {
			pc = cs[len(cs)-1]
			cs[len(cs)-1] = nil
			t.idle[key] = cs[:len(cs)-1]
		}
		t.mu.Unlock()
		if pc != nil {
			return pc, true, nil
		}
	}
	c, err := t.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, false, err
	}
	if secure {
		cfg := t.tls
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, false, err
		}
		c = tc
	}
	return &h1Conn{c: c, br: bufio.NewReaderSize(c, 4096), bw: bufio.NewWriterSize(c, 4096), key: key}, false, nil
}

// poolKey names the pool of connections to addr: plain and TLS ones are
// never mixed.
func poolKey(addr string, secure bool) string {
	if secure {
		return "https://" + addr
	}
	return addr
}

// dropIdle closes the pooled connections of one pool (poolKey).
func (t *h1Transport) dropIdle(key string) {
	t.mu.Lock()
	cs := t.idle[key]
	delete(t.idle, key)
	t.mu.Unlock()
	for _, pc := range cs {
		pc.c.Close()
	}
}

// put pools pc for the next request, or closes it when the pool is full.
func (t *h1Transport) put(pc *h1Conn) {
	t.mu.Lock()
	if cs := t.idle[pc.key]; len(cs) < t.maxIdle {
		pc.idle = time.Now()
		t.idle[pc.key] = append(cs, pc)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	pc.c.Close()
}

// exchange writes req on pc and reads the head of its answer. The
// returned response's body owns pc: it pools pc at EOF or closes it.
func (t *h1Transport) exchange(ctx context.Context, pc *h1Conn, req *http.Request, reused bool) (*http.Response, error) {
	// Cancelling ctx interrupts whatever I/O is under way, the answer's
	// body included; such a connection is closed, never pooled.
	stop := context.AfterFunc(ctx, func() { pc.c.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*http.Response, error) {
		stop()
		pc.c.Close()
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	// A pooled connection the server has closed is found here, before
	// anything is sent on it: after the write, a closed connection can
	// no longer tell whether the server ran the request.
	if reused && time.Since(pc.idle) >= t.staleAfter && !connAlive(pc) {
		return fail(errors.Join(errStaleConn, io.EOF))
	}
	// A failed write never delivers a whole request: safe to send again.
	if err := req.Write(pc.bw); err != nil {
		return fail(t.staleIf(reused, err))
	}
	if err := pc.bw.Flush(); err != nil {
		return fail(t.staleIf(reused, err))
	}
	// Nothing of the answer read yet. The server may have run the
	// request before closing, so only a request that may run twice is
	// sent again (net/http's rule); others fail, and the locknode client
	// retries its own under their request ids.
	if _, err := pc.br.Peek(1); err != nil {
		if replayable(req) {
			err = t.staleIf(reused, err)
		}
		return fail(err)
	}
	var resp *http.Response
	for {
		var err error
		resp, err = http.ReadResponse(pc.br, req)
		if err != nil {
			return fail(err)
		}
		// Skip interim answers (103 Early Hints and the like); 101
		// would be a protocol switch, which handles() never lets in.
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		resp.Body.Close()
	}
	keep := !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols
	done := func(clean bool) {
		if stop() && clean && keep {
			t.put(pc)
			return
		}
		pc.c.Close()
	}
	if resp.Body == http.NoBody {
		done(true)
		return resp, nil
	}
	resp.Body = &h1Body{rc: resp.Body, done: done, ctx: ctx}
	return resp, nil
}

// replayable is net/http's rule for sending a request again after it was
// written: an idempotent method, or an idempotency key.
func replayable(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != ""
}

// connAlive reports whether a pooled connection is still open: no EOF and
// no unexpected bytes waiting (see peekConn).
func connAlive(pc *h1Conn) bool {
	if pc.br.Buffered() > 0 {
		return false // bytes nobody asked for: not a clean connection
	}
	c := pc.c
	if tc, ok := c.(*tls.Conn); ok {
		// The socket underneath: a close or a close_notify alert from
		// the server shows there the same way.
		c = tc.NetConn()
	}
	return peekConn(c)
}

// staleIf marks a write or first-read failure on a pooled connection
// that says the peer had closed it.
func (t *h1Transport) staleIf(reused bool, err error) error {
	if reused && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
		return errors.Join(errStaleConn, err)
	}
	return err
}

// h1Body is an answer's body: reading it to EOF gives its connection back
// to the pool; closing it earlier closes the connection (what remains of
// the answer is not worth reading: the client reads answers whole).
type h1Body struct {
	rc   io.ReadCloser
	done func(clean bool)
	ctx  context.Context
	once sync.Once
}

func (b *h1Body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.once.Do(func() { b.done(true) })
	} else if err != nil {
		b.once.Do(func() { b.done(false) })
		if cerr := b.ctx.Err(); cerr != nil {
			// The read was cut by the cancel, as with net/http.
			err = cerr
		}
	}
	return n, err
}

func (b *h1Body) Close() error {
	b.once.Do(func() { b.done(false) })
	return nil
}
