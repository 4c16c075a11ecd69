package netguard

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Backoff bounds of a failing accept, as net/http's Server.Serve.
const (
	MinAcceptDelay = 5 * time.Millisecond
	MaxAcceptDelay = time.Second
)

// LogEvery is the least time between two log lines of one kind (accept
// failures, refused connections, authentication failures).
const LogEvery = 10 * time.Second

// Listener is a net.Listener whose Accept survives failed accepts: it
// backs off and retries until it gets a connection or the listener is
// closed. Listen returns one.
type Listener struct {
	net.Listener
	name string
	log  hclog.Logger
	rl   RateLog

	done      chan struct{} // closed by Close
	closeOnce sync.Once

	mu       sync.Mutex
	failing  error     // the last accept error while retrying; nil once one succeeds
	since    time.Time // when failing began
	lastFail time.Time // when the last accept failed
	// failWindow is how long after its last failed accept the listener
	// still counts as failing: accept blocks (no error) once descriptors
	// are free and no client is waiting, so "failing" must expire rather
	// than wait for the next connection, which a load balancer would not
	// send to a port it believes down.
	failWindow time.Duration
	stopped    error // why accepting ended without Close
	failures   atomic.Int64
}

// Listen wraps ln. name names the port in log lines and errors ("resp",
// "http", "peer"); log receives the WARN lines (nil: none).
func Listen(ln net.Listener, name string, log hclog.Logger) *Listener {
	if l, ok := ln.(*Listener); ok {
		return l
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Listener{Listener: ln, name: name, log: log, done: make(chan struct{}), rl: RateLog{Every: LogEvery},
		failWindow: 3 * MaxAcceptDelay}
}

// Accept waits for the next connection. A failed accept is retried after a
// delay that doubles from MinAcceptDelay to MaxAcceptDelay, whatever the
// error: an fd limit, a connection aborted before it was accepted and the
// like pass, and an error that does not is still better retried once a
// second than ending the port for the life of the process. Accept returns
// an error only when the listener is closed: by Close (net.ErrClosed), or
// underneath (the error is kept for Err).
func (l *Listener) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := l.Listener.Accept()
		if err == nil {
			if delay > 0 {
				l.recovered()
			}
			return c, nil
		}
		select {
		case <-l.done:
			return nil, fmt.Errorf("%s listener: %w", l.name, net.ErrClosed)
		default:
		}
		if errors.Is(err, net.ErrClosed) {
			err = fmt.Errorf("%s listener closed underneath its server: %w", l.name, err)
			l.mu.Lock()
			l.stopped = err
			l.mu.Unlock()
			l.log.Error("listener stopped: the port no longer accepts connections", "port", l.name, "error", err)
			return nil, err
		}
		delay = min(max(2*delay, MinAcceptDelay), MaxAcceptDelay)
		l.fail(err, delay)
		t := time.NewTimer(delay)
		select {
		case <-l.done:
			t.Stop()
			return nil, fmt.Errorf("%s listener: %w", l.name, net.ErrClosed)
		case <-t.C:
		}
	}
}

func (l *Listener) fail(err error, delay time.Duration) {
	n := l.failures.Add(1)
	now := time.Now()
	l.mu.Lock()
	if l.failing == nil || now.Sub(l.lastFail) > l.failWindow {
		l.since = now
	}
	l.failing, l.lastFail = err, now
	l.mu.Unlock()
	if ok, suppressed := l.rl.Allow(); ok {
		l.log.Warn("accept failed; retrying (new connections wait meanwhile)", "port", l.name, "error", err,
			"delay", delay, "failures", n, "not_logged", suppressed)
	}
}

func (l *Listener) recovered() {
	l.mu.Lock()
	since := l.since
	l.failing = nil
	l.mu.Unlock()
	l.log.Info("accepting connections again", "port", l.name, "failing_for", time.Since(since).Round(time.Millisecond))
}

// Close stops Accept (at once, even in a backoff wait) and closes the
// underlying listener.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// Err reports whether the port accepts connections: nil when it does (or
// was closed by Close), else an error wrapping ErrAcceptFailing while
// accepts fail and are retried (until one succeeds, or none has failed
// for 3 s), or ErrStopped once accepting ended without Close.
func (l *Listener) Err() error {
	select {
	case <-l.done:
		return nil
	default:
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.stopped != nil:
		return fmt.Errorf("%w: %w", ErrStopped, l.stopped)
	case l.failing != nil && time.Since(l.lastFail) <= l.failWindow:
		return fmt.Errorf("%w: %s port since %s: %w", ErrAcceptFailing, l.name, l.since.UTC().Format(time.RFC3339), l.failing)
	}
	return nil
}

// Failures returns the number of failed accepts so far.
func (l *Listener) Failures() int64 { return l.failures.Load() }

// Errors of Listener.Err.
var (
	ErrAcceptFailing = errors.New("netguard: accepting connections fails")
	ErrStopped       = errors.New("netguard: listener stopped")
)
