package httpapi

import (
	"context"
	"errors"
	"sync"
)

// sharedReads lets the blocking queries that one change wakes share the
// read of their answer: thousands of watchers of one key, woken by the
// same entry, would otherwise each make a linearizable read (on a
// follower, each a round trip to the leader) of the same state.
//
// A read is shared only with the queries that asked before it started,
// so each answer is still linearizable for its own request: per key,
// one read runs, and the queries that arrive meanwhile wait for the next
// one, which starts when it ends.
type sharedReads[T any] struct {
	mu   sync.Mutex
	keys map[readKey]*readSlot[T]
}

type readKey struct {
	key   string
	stale bool
}

// readSlot is one key's running read and the next one, not started.
type readSlot[T any] struct {
	running, next *readCall[T]
}

type readCall[T any] struct {
	start chan struct{} // closed when this call may run (the one before it ended)
	done  chan struct{} // closed when v and err are set
	v     T
	err   error
}

func newReadCall[T any]() *readCall[T] {
	return &readCall[T]{start: make(chan struct{}), done: make(chan struct{})}
}

// do returns read's result, shared with the calls for k that joined
// the same read. read must use only the context it is given.
func (g *sharedReads[T]) do(ctx context.Context, k readKey, read func(context.Context) (T, error)) (T, error) {
	g.mu.Lock()
	if g.keys == nil {
		g.keys = make(map[readKey]*readSlot[T])
	}
	s := g.keys[k]
	if s == nil {
		s = &readSlot[T]{}
		g.keys[k] = s
	}
	var c *readCall[T]
	runs := false
	switch {
	case s.running == nil:
		c, runs = newReadCall[T](), true
		close(c.start)
		s.running = c
	case s.next == nil:
		// The running read may have started before this query asked.
		c, runs = newReadCall[T](), true
		s.next = c
	default:
		c = s.next
	}
	g.mu.Unlock()

	if runs {
		// The caller that opened a call runs it once the one before it
		// ended, even if its own client left meanwhile: others wait on
		// it. Its context may be gone by then; the read then fails
		// with the context's error, and joiners whose own context is
		// alive read again by themselves (below).
		<-c.start
		c.v, c.err = read(ctx)
		g.mu.Lock()
		close(c.done)
		s.running = s.next
		s.next = nil
		if s.running != nil {
			close(s.running.start)
		} else {
			delete(g.keys, k)
		}
		g.mu.Unlock()
		return c.v, c.err
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
	if c.err != nil && (errors.Is(c.err, context.Canceled) || errors.Is(c.err, context.DeadlineExceeded)) && ctx.Err() == nil {
		return read(ctx)
	}
	return c.v, c.err
}
