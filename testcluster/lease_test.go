package testcluster

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"
)

// holdAndWatch acquires key through node via, then watches (from a
// neutral real clock) for the hold to end; between the two it runs mid.
func holdAndWatch(t *testing.T, ctx context.Context, c *Cluster, h *History, via int, ttl time.Duration, mid func() int) LeaseEnd {
	t.Helper()
	cl := c.NativeClient(h, via, via)
	key, owner := "lease-"+NewOwner(), NewOwner()
	g, err := cl.TryAcquire(ctx, key, owner, ttl)
	if err != nil {
		t.Fatal(err)
	}
	reader := mid()
	ended, err := WatchLease(ctx, key, owner, 2*time.Millisecond, LockerReader(c.Locker(reader)))
	if err != nil {
		t.Fatal(err)
	}
	return LeaseEnd{Owner: owner, Sent: g.Sent, TTL: ttl, EndedBy: ended}
}

// Followers' clocks are an hour off (one also slow); the leader is
// killed so one of them leads. No hold ends before send time + TTL.
func TestLeasesNotEarlyUnderSkew(t *testing.T) {
	c := New(t, 3, Options{})
	h := NewHistory()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const ttl = 1500 * time.Millisecond
	l := c.LeaderIndex()
	f1, f2 := (l+1)%3, (l+2)%3
	c.SkewClock(f1, time.Hour, 0.9)
	c.SkewClock(f2, -time.Hour, 1.0)

	var obs []LeaseEnd
	nl := -1
	// Granted by the old leader, ended by the skewed new one.
	obs = append(obs, holdAndWatch(t, ctx, c, h, f1, ttl, func() int {
		c.Crash(l)
		var err error
		if nl, err = c.WaitLeader(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("new leader %s (skewed)", nodeID(nl))
		return nl
	}))
	// Granted and ended under the skewed leader, asked through the other
	// skewed node.
	other := f1
	if other == nl {
		other = f2
	}
	obs = append(obs, holdAndWatch(t, ctx, c, h, other, ttl, func() int { return nl }))
	for _, o := range obs {
		t.Logf("hold %s: ended by %v after send (ttl %v)", o.Owner, o.EndedBy.Sub(o.Sent), o.TTL)
	}
	if err := CheckLeases(obs); err != nil {
		t.Fatal(err)
	}
}

// A leader whose lease clock jumps with its wall clock (the rule broken:
// a one-hour jump of the clock it measures leases with) ends a lease at
// once — and the lease checker catches it.
func TestCheckLeasesCatchesBrokenClockRule(t *testing.T) {
	c := New(t, 3, Options{})
	h := NewHistory()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l := c.LeaderIndex()
	o := holdAndWatch(t, ctx, c, h, l, 5*time.Second, func() int {
		c.JumpClock(l, time.Hour)
		return l
	})
	if err := CheckLeases([]LeaseEnd{o}); !errors.Is(err, ErrLeaseTooShort) {
		t.Fatalf("early lease end not caught: %v (ended %v after send)", err, o.EndedBy.Sub(o.Sent))
	}
}

// A follower's disk fails long enough for the leader's retries to it to
// back off for seconds; it heals just as the other follower crashes. The
// leader and the healed follower are a healthy majority, so a hold due
// then ends within a tick and an election of its TTL. Before the raft
// fork capped that backoff at half a heartbeat timeout (sim seed 341), the
// leader kept waiting out the backoff, nothing committed, and the hold
// was still read as held seconds past its TTL.
func TestHoldEndsOnTimeAfterAFollowersDiskHeals(t *testing.T) {
	c := New(t, 3, Options{})
	h := NewHistory()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l := c.LeaderIndex()
	a, b := (l+1)%3, (l+2)%3
	cl := c.NativeClient(h, 0, l)
	defer cl.Close()

	// Writes keep the leader sending to a, so its failures pile up: at
	// the upstream backoff the retry due after 5.1 s of failures waits
	// 5.1 s more.
	c.FailDisk(a, syscall.ENOSPC)
	for end := time.Now().Add(5500 * time.Millisecond); time.Now().Before(end); {
		key, owner := "w-"+NewOwner(), NewOwner()
		if _, err := cl.TryAcquire(ctx, key, owner, time.Minute); err != nil {
			t.Fatalf("write with one follower's disk full: %v", err)
		}
	}
	const ttl = time.Second
	key, owner := "lease-"+NewOwner(), NewOwner()
	if _, err := cl.TryAcquire(ctx, key, owner, ttl); err != nil {
		t.Fatal(err)
	}
	granted := time.Now()
	c.HealDisk(a)
	c.Crash(b)
	w, err := WatchHold(ctx, key, owner, 10*time.Millisecond, LockerReader(c.Locker(l)))
	if err != nil {
		t.Fatal(err)
	}
	// One tick (100 ms) and a retry at the cap (150 ms) beyond the TTL,
	// with room for a busy machine; the backoff alone was 4.7 s.
	if held := w.HeldSent.Sub(granted); held > ttl+1500*time.Millisecond {
		t.Fatalf("hold still read as held %v after its grant (ttl %v): the leader did not replicate to the healed follower", held, ttl)
	}
	t.Logf("hold seen gone %v after its grant (ttl %v), last seen held at %v", w.GoneAt.Sub(granted), ttl, w.HeldSent.Sub(granted))
}
