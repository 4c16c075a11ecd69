package testcluster

import (
	"sync"
	"time"
)

// skewClock is one node's cluster.Clock. It runs at rate times real time
// from an anchor, offset from the real clock, and can be paused (Now
// blocks, so the node's leader clock and ticks stop with the rest of
// it). It lives as long as the Cluster, across the node's restarts.
//
// A time.Time carries its wall and monotonic readings together, so a
// change of offset moves both: apply skew to a node that is not leading
// (as the nemesis does) to model a wall-clock difference, whose only
// effect under the time rule is the first leader's seed of the cluster
// clock. The rate is what a leader's lease arithmetic feels.
type skewClock struct {
	mu         sync.Mutex
	anchorReal time.Time // real reading when the current rate/offset began
	anchorRead time.Time // this clock's reading at that moment
	rate       float64
	offset     time.Duration
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

// skew sets the offset from real time and the rate from now on.
func (c *skewClock) skew(offset time.Duration, rate float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	real := time.Now()
	cur := c.readLocked(real)
	c.anchorReal = real
	c.anchorRead = cur.Add(offset - c.offset)
	c.offset = offset
	c.rate = rate
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
