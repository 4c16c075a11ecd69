package testcluster

import (
	"errors"
	"sync"
	"time"
	"unsafe"
)

// skewClock is one node's cluster.Clock. It runs at rate times real time
// from an anchor and can be paused (Now
// blocks, so the node's leader clock and ticks stop with the rest of
// it). It lives as long as the Cluster, across the node's restarts.
//
// The offset is a wall-clock offset: setting a node's wall clock does not
// move its monotonic clock, so a change of offset (skew, or a jump of the
// wall clock, jumpWall) moves only the wall part of each reading — what
// UnixMilli and Format see — and never what Sub and Before measure
// (wallShifted). Under the time rule a wall clock is read only to seed a
// fresh cluster's clock, before any fault, and every node measures
// elapsed time with its monotonic clock, leaders and followers alike (a
// follower's bound of the cluster clock becomes the next leader's start).
// The rate is what that arithmetic feels. jump moves the monotonic
// reading itself: a broken clock, which the time rule cannot defend
// against.
type skewClock struct {
	mu         sync.Mutex
	anchorReal time.Time // real reading when the current rate/offset began
	anchorRead time.Time // this clock's reading at that moment
	rate       float64
	offset     time.Duration // the wall-clock offset: in the wall part of a reading only
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
	r := c.readLocked(time.Now())
	if w, ok := wallShifted(r, c.offset); ok {
		return w
	}
	return r // checked by jumpWall: only a zero offset gets here
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

// jumpWall moves the wall clock by d (an NTP step, an operator's date
// command); the monotonic reading goes on as before.
func (c *skewClock) jumpWall(d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := wallShifted(time.Now(), c.offset+d); !ok {
		return errWallShift
	}
	c.offset += d
	return nil
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

var errWallShift = errors.New("testcluster: this Go's time.Time cannot carry a wall-clock reading apart from its monotonic one")

// timeLayout is time.Time's representation (Go's time package: wall,
// ext, loc). With hasMonotonic set in wall, wall holds 33 bits of seconds
// since 1885 and 30 bits of nanoseconds, and ext the monotonic reading in
// nanoseconds; that is the only way a time.Time carries a wall reading
// apart from its monotonic one, as time.Now's do after the system clock
// is stepped. wallShifted checks its own result, and TestWallShifted
// fails if the layout ever changes.
type timeLayout struct {
	wall uint64
	ext  int64
	loc  *time.Location
}

const (
	hasMonotonic = 1 << 63
	nsecBits     = 30
	secBits      = 33
	// unixFrom1885 is the Unix time of 1885-01-01, the epoch of wall's
	// seconds.
	unixFrom1885 = -2682288000
)

// wallShifted returns t with its wall-clock reading moved by d and its
// monotonic reading kept: Sub, Before and After between such readings
// measure the monotonic clock, UnixMilli and Format read the wall. A t
// without a monotonic reading (time.Now inside a synctest bubble) gets
// its own wall reading as the monotonic one. false when the result would
// not be one.
func wallShifted(t time.Time, d time.Duration) (time.Time, bool) {
	in := (*timeLayout)(unsafe.Pointer(&t))
	mono := t.UnixNano()
	if in.wall&hasMonotonic != 0 {
		mono = in.ext
		if d == 0 {
			return t, true
		}
	}
	u := t.UnixNano() + int64(d)
	sec, nsec := u/1e9, u%1e9
	if nsec < 0 {
		sec, nsec = sec-1, nsec+1e9
	}
	sec -= unixFrom1885
	if sec < 0 || sec >= 1<<secBits {
		return t, false
	}
	out := t
	o := (*timeLayout)(unsafe.Pointer(&out))
	o.wall = hasMonotonic | uint64(sec)<<nsecBits | uint64(nsec)
	o.ext = mono
	if out.UnixNano() != u || out.Round(0).UnixNano() != u {
		return t, false
	}
	return out, true
}
