package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/internal/oteltrace"
	"github.com/locknode/locknode/wire"
)

// sessions is the part of a Client that opens, keeps alive and closes
// server sessions: the session calls of api.Locker, and Session handles
// whose loop keeps one alive.
type sessions struct {
	*caller
}

// Session is a server session kept alive by a background loop. Holds and
// leaderships bound to it (WithSession, Campaign) end when it ends.
type Session struct {
	c     *sessions
	id    string
	ttl   time.Duration
	every time.Duration
	// traced is the span that opened the session: keep-alives link to it.
	traced trace.SpanContext

	done     chan struct{} // closed when the session is over
	stop     chan struct{} // closed by Close
	loopDone chan struct{}

	mu       sync.Mutex
	err      error
	safe     time.Time
	stopOnce sync.Once
}

type sessionOptions struct{ every time.Duration }

// SessionOption adjusts NewSession.
type SessionOption func(*sessionOptions)

// WithKeepAliveEvery sets the keep-alive period (default TTL/3). It must
// be below TTL minus the drift margin.
func WithKeepAliveEvery(d time.Duration) SessionOption {
	return func(o *sessionOptions) { o.every = d }
}

// NewSession opens a session of ttl and keeps it alive until Close or
// until it can no longer be kept: the server says it expired, or no
// keep-alive succeeded before its safe deadline (last successful
// keep-alive's send time + ttl - drift margin); Done is closed then.
// ctx bounds the opening request only.
func (c *sessions) NewSession(ctx context.Context, ttl time.Duration, opts ...SessionOption) (_ *Session, rerr error) {
	ctx, sp := startSpan(ctx, "locknode.NewSession", oteltrace.AttrTTLMs.Int64(ttl.Milliseconds()))
	defer func() { sp.end(rerr) }()
	o := sessionOptions{every: ttl / 3}
	for _, f := range opts {
		f(&o)
	}
	margin := c.cfg.margin(ttl)
	if o.every <= 0 || o.every >= ttl-margin {
		return nil, fmt.Errorf("%w: keep-alive period %v must be in (0, ttl - margin = %v)", api.ErrBadRequest, o.every, ttl-margin)
	}
	sent := time.Now()
	info, err := c.OpenSession(ctx, ttl)
	if err != nil {
		return nil, err
	}
	s := &Session{
		c: c, id: info.ID, ttl: ttl, every: o.every,
		done: make(chan struct{}), stop: make(chan struct{}), loopDone: make(chan struct{}),
		safe: sent.Add(ttl - margin), traced: sp.spanContext(),
	}
	// Ends when Close closes s.stop or the session is over.
	go s.run(sent)
	return s, nil
}

// ID returns the server's session id.
func (s *Session) ID() string { return s.id }

// TTL returns the session's TTL.
func (s *Session) TTL() time.Duration { return s.ttl }

// Done returns a channel closed when the session is over (Close, expiry,
// or keep-alive failing past the safe deadline).
func (s *Session) Done() <-chan struct{} { return s.done }

// Err says why the session is over (nil while it is not): it wraps
// ErrSessionEnd, and the server's answer when there was one.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close stops the keep-alive loop and closes the session on the server,
// which releases its holds. ctx bounds that request.
func (s *Session) Close(ctx context.Context) (rerr error) {
	ctx, sp := startSpan(ctx, "locknode.Session.Close")
	defer func() { sp.end(rerr) }()
	first := false
	s.stopOnce.Do(func() { first = true; close(s.stop) })
	<-s.loopDone
	if !first {
		return nil
	}
	err := s.c.CloseSession(ctx, s.id)
	s.end(fmt.Errorf("%w: closed", ErrSessionEnd))
	if errors.Is(err, api.ErrSessionExpired) {
		return nil // already gone: closing it is done
	}
	return err
}

func (s *Session) end(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
		close(s.done)
	}
}

func (s *Session) run(sent time.Time) {
	defer close(s.loopDone)
	next := sent.Add(s.every)
	for {
		s.mu.Lock()
		safe := s.safe
		s.mu.Unlock()
		tNext := time.NewTimer(time.Until(next))
		tSafe := time.NewTimer(time.Until(safe))
		select {
		case <-s.stop:
			tNext.Stop()
			tSafe.Stop()
			return
		case <-tSafe.C:
			tNext.Stop()
			s.end(fmt.Errorf("%w: no keep-alive succeeded before the safe deadline", ErrSessionEnd))
			return
		case <-tNext.C:
			tSafe.Stop()
		}
		ctx, cancel := context.WithDeadline(context.Background(), safe)
		// Close must not wait for a slow keep-alive: this cancels it.
		// Ends when Close is called or ctx is done (cancel below).
		go func() {
			select {
			case <-s.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		kctx, sp := linkedSpan(ctx, "locknode.session.keepalive", s.traced)
		_, sent, err := s.c.keepAlive(kctx, s.id)
		sp.end(err)
		cancel()
		switch {
		case err == nil:
			s.mu.Lock()
			s.safe = sent.Add(s.ttl - s.c.cfg.margin(s.ttl))
			s.mu.Unlock()
			next = sent.Add(s.every)
		case errors.Is(err, api.ErrSessionExpired), errors.Is(err, api.ErrNotFound):
			s.end(fmt.Errorf("%w: %w", ErrSessionEnd, err))
			return
		default:
			s.c.log.Warn("session keep-alive failed", "session", s.id, "error", err)
			next = time.Now().Add(min(s.every/4+time.Millisecond, time.Second))
		}
	}
}

// OpenSession implements api.Locker. It carries no request id: a retry
// after a lost answer can open a second session, which nobody keeps
// alive and which therefore expires after ttl.
func (c *sessions) OpenSession(ctx context.Context, ttl time.Duration) (_ api.SessionInfo, rerr error) {
	ctx, sp := startSpan(ctx, "locknode.OpenSession", oteltrace.AttrTTLMs.Int64(ttl.Milliseconds()))
	defer func() { sp.end(rerr) }()
	sreq := api.SessionTTL(ttl)
	if err := sreq.Validate(c.cfg.Limits); err != nil {
		return api.SessionInfo{}, err
	}
	var info api.SessionInfo
	_, err := c.do(ctx, call{op: "open session", method: http.MethodPost, path: wire.PathSessions,
		body: jsonBody(sreq), out: &info})
	return info, err
}

// KeepAlive implements api.Locker.
func (c *sessions) KeepAlive(ctx context.Context, id string) (_ api.SessionInfo, rerr error) {
	ctx, sp := startSpan(ctx, "locknode.KeepAlive")
	defer func() { sp.end(rerr) }()
	info, _, err := c.keepAlive(ctx, id)
	return info, err
}

func (c *sessions) keepAlive(ctx context.Context, id string) (api.SessionInfo, time.Time, error) {
	var info api.SessionInfo
	sent, err := c.do(ctx, call{op: "keepalive", method: http.MethodPut, path: wire.PathSessions + "/" + url.PathEscape(id) + "/keepalive", out: &info})
	return info, sent, err
}

// CloseSession implements api.Locker.
func (c *sessions) CloseSession(ctx context.Context, id string) (rerr error) {
	ctx, sp := startSpan(ctx, "locknode.CloseSession")
	defer func() { sp.end(rerr) }()
	_, err := c.do(ctx, call{op: "close session", method: http.MethodDelete, path: wire.PathSessions + "/" + url.PathEscape(id)})
	return err
}
