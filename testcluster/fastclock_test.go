package testcluster

import (
	"context"
	"testing"
	"time"
)

// TestFastFollowerClockNeverEndsLeasesEarly: both followers' clocks run
// 5% fast for a while before the leader is killed. A node's bound of the
// cluster clock extrapolates from an applied entry at its own rate, so
// from an old entry a fast clock runs far ahead (5% of the entry's age);
// the new leader must start from a recent one, and a lease granted just
// before the kill ends no earlier than its drift margin allows.
func TestFastFollowerClockNeverEndsLeasesEarly(t *testing.T) {
	// 5% fast over the TTL costs 100ms; over the anchor's age (the time
	// since the latest entry, at most ClockSyncInterval, 1s) ~50ms. From
	// an anchor 8s old it would be 400ms more.
	leaseAfterSkewedSpell(t, 300*time.Millisecond, func(c *Cluster, l int) {
		for _, f := range []int{(l + 1) % 3, (l + 2) % 3} {
			c.SkewClock(f, 0, 1.05)
		}
	})
}

// TestSlowLeaderClockNeverEndsLeasesEarly is the mirror case: the
// leader's clock runs at half speed, so the log's time falls behind
// what the followers' clocks see pass. A follower's bound extrapolated
// at its own rate from an entry applied before the slow spell would be
// seconds ahead of the log; a new leader started from it would end at
// once a lease the slow leader granted just before it died.
func TestSlowLeaderClockNeverEndsLeasesEarly(t *testing.T) {
	leaseAfterSkewedSpell(t, 0, func(c *Cluster, l int) { c.SkewClock(l, 0, 0.5) })
}

// leaseAfterSkewedSpell skews clocks (skew gets the leader's index),
// lets 8 s pass, then takes a 2 s lease through the leader, kills it and
// checks through the new leader that the lease did not end before send
// time + TTL - margin (default: the clients' drift margin, TTL/10).
func leaseAfterSkewedSpell(t *testing.T, margin time.Duration, skew func(c *Cluster, leader int)) {
	c := New(t, 3, Options{})
	h := NewHistory()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ttl = 2 * time.Second
	l := c.LeaderIndex()
	skew(c, l)
	// The drift grows with the spell's length: let it grow (the
	// scenario itself, not synchronisation).
	time.Sleep(8 * time.Second)
	o := holdAndWatch(t, ctx, c, h, l, ttl, func() int {
		c.Crash(l)
		nl, err := c.WaitLeader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return nl
	})
	t.Logf("hold ended by %v after send (ttl %v)", o.EndedBy.Sub(o.Sent), ttl)
	o.Margin = margin
	if o.Margin == 0 {
		o.Margin = ttl / 10
	}
	if err := CheckLeases([]LeaseEnd{o}); err != nil {
		t.Fatal(err)
	}
}
