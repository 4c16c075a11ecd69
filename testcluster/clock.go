package testcluster

import (
	"sync"
	"time"
)

// skewClock is one node's cluster.Clock. It runs at rate times real time
// from an anchor and can be paused (Now
// blocks, so the node's leader clock and ticks stop with the rest of
// it). It lives as long as the Cluster, across the node's restarts.
//
// The offset is a wall-clock offset: setting a node's wall clock does not
// move its monotonic clock, so a change of offset leaves the reading where
// it is (a time.Time carries both readings together and cannot show them
// apart). Under the time rule a wall clock is read only to seed a fresh
// cluster's clock, before any fault, and every node measures elapsed time
// with its monotonic clock, leaders and followers alike (a follower's
// bound of the cluster clock becomes the next leader's start). The rate
// is what that arithmetic feels. jump moves the monotonic reading itself:
// a broken clock, which the time rule cannot defend against.
type skewClock struct {
	mu         sync.Mutex
	anchorReal time.Time // real reading when the current rate/offset began
	anchorRead time.Time // this clock's reading at that moment
	rate       float64
	offset     time.Duration // the wall-clock offset; not in the reading (above)
	gate       chan struct{} // closed while running
}

func newSkewClock() *skewClock {
	now := time.Now()
	g := make(chan struct{})
	close(g)
	return &skewClock{anchorReal: now, anchorRead: now, rate: 1, gate: g}
}

// Now implements cluster.Clock.
func (c *skewClock) Now() time.Time {
	c.mu.Lock()
	g := c.gate
	c.mu.Unlock()
	<-g
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readLocked(time.Now())
}

func (c *skewClock) readLocked(real time.Time) time.Time {
	d := real.Sub(c.anchorReal)
	return c.anchorRead.Add(time.Duration(float64(d) * c.rate))
}

// skew sets the wall-clock offset from real time (which leaves the
// reading where it is) and the rate from now on.
func (c *skewClock) skew(offset time.Duration, rate float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	real := time.Now()
	c.anchorRead = c.readLocked(real)
	c.anchorReal = real
	c.offset = offset
	c.rate = rate
}

// jump moves the reading by d at once.
func (c *skewClock) jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	real := time.Now()
	c.anchorRead = c.readLocked(real).Add(d)
	c.anchorReal = real
}

func (c *skewClock) setPaused(p bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.gate:
		if p {
			c.gate = make(chan struct{})
		}
	default:
		if !p {
			close(c.gate)
		}
	}
}
