package redisbridge

import (
	"context"
	"sync"
	"time"
)

// reqCtx is the context of one command: a deadline RequestTimeout away
// that costs no timer until someone waits on it. context.WithTimeout arms
// a runtime timer for every command and stops it again; on the leader a
// command's Apply never selects on its context (the raft future answers
// first), so the timer was pure CPU per command. The first call of Done,
// Value or AfterFunc builds the real deadline context and from then on
// everything is delegated to it, so derived contexts (context.WithCancel
// of a reqCtx) attach to it without a goroutine of their own.
type reqCtx struct {
	deadline time.Time

	mu     sync.Mutex
	real   context.Context // nil until materialised
	cancel context.CancelFunc
	done   bool // cancelled before materialised
}

var _ context.Context = (*reqCtx)(nil)

func newReqCtx(timeout time.Duration) (*reqCtx, context.CancelFunc) {
	c := startReqCtx(timeout)
	return c, c.stop
}

// startReqCtx is newReqCtx for a caller that calls stop itself: the
// cancel function, a method value, is an allocation of its own.
func startReqCtx(timeout time.Duration) *reqCtx {
	return &reqCtx{deadline: time.Now().Add(timeout)}
}

// materialise returns the real context, building it on first use.
func (c *reqCtx) materialise() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.real == nil {
		c.real, c.cancel = context.WithDeadline(context.Background(), c.deadline)
		if c.done {
			c.cancel()
		}
	}
	return c.real
}

func (c *reqCtx) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	if c.cancel != nil {
		c.cancel()
	}
}

func (c *reqCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *reqCtx) Done() <-chan struct{} { return c.materialise().Done() }

func (c *reqCtx) Value(key any) any { return c.materialise().Value(key) }

// AfterFunc lets context.AfterFunc and derived contexts hook in without a
// goroutine (context's afterFuncer).
func (c *reqCtx) AfterFunc(f func()) func() bool {
	return context.AfterFunc(c.materialise(), f)
}

// Err reports what the real context would, without building it while the
// answer is known: Canceled after stop, DeadlineExceeded once the
// deadline passed (Done, when built then, is closed at once).
func (c *reqCtx) Err() error {
	c.mu.Lock()
	real, done := c.real, c.done
	c.mu.Unlock()
	if real != nil {
		return real.Err()
	}
	if done {
		return context.Canceled
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}
