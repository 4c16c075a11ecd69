package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// readiness is GET /readyz of a node process: the node's own conditions
// (cluster.Node.Ready) and those of the process around it, such as a
// client listener whose accept loop stopped. Each check is named; the
// answer names every failing one.
type readiness struct {
	mu     sync.Mutex
	checks []readyCheck
}

type readyCheck struct {
	name string
	fn   func(context.Context) error
}

// add registers a check; fn returns nil while its part serves. A
// non-empty name prefixes its reason.
func (r *readiness) add(name string, fn func(context.Context) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checks = append(r.checks, readyCheck{name, fn})
}

// ready runs every check in the order added and returns nil when all
// pass, else an error naming each failing check (it wraps the first).
func (r *readiness) ready(ctx context.Context) error {
	r.mu.Lock()
	checks := append([]readyCheck(nil), r.checks...)
	r.mu.Unlock()
	var first error
	var reasons []string
	for _, c := range checks {
		if err := c.fn(ctx); err != nil {
			if first == nil {
				first = err
			}
			reason := err.Error()
			if c.name != "" {
				reason = c.name + ": " + reason
			}
			reasons = append(reasons, reason)
		}
	}
	if first == nil {
		return nil
	}
	return &notReady{reasons: reasons, first: first}
}

type notReady struct {
	reasons []string
	first   error
}

func (e *notReady) Error() string { return strings.Join(e.reasons, "; ") }
func (e *notReady) Unwrap() error { return e.first }

// errListenerStopped: a client listener's accept loop returned; the
// port takes no new connections until the process restarts.
var errListenerStopped = errors.New("listener stopped accepting connections")

// listenerState records that a server's accept loop on one listener
// returned (Serve's error), for readiness.
type listenerState struct {
	addr string

	mu      sync.Mutex
	stopped bool
	err     error // what Serve returned; nil for a clean close
}

// stop records that Serve returned err.
func (l *listenerState) stop(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped, l.err = true, err
}

// check is nil while the accept loop runs.
func (l *listenerState) check(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case !l.stopped:
		return nil
	case l.err == nil:
		return fmt.Errorf("%s: %w (closed)", l.addr, errListenerStopped)
	}
	return fmt.Errorf("%s: %w: %w", l.addr, errListenerStopped, l.err)
}
