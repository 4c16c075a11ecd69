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
	c := New(t, 3, Options{})
	h := NewHistory()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ttl = 2 * time.Second
	l := c.LeaderIndex()
	for _, f := range []int{(l + 1) % 3, (l + 2) % 3} {
		c.SkewClock(f, 0, 1.05)
	}
	// The drift accumulates with the anchor's age: let it grow (the
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
	// 5% fast over the TTL costs 100ms; over the anchor's age (about
	// ClockSyncInterval, 1s, and the time until the next entry) ~100ms.
	// From the oldest anchor, 8s old, it would be 400ms more.
	o.Margin = 300 * time.Millisecond
	if err := CheckLeases([]LeaseEnd{o}); err != nil {
		t.Fatal(err)
	}
}

// TestSlowLeaderClockNeverEndsLeasesEarly is the mirror case: the
// leader's clock runs at half speed, so the log's time falls behind
// what the followers' clocks see pass. A follower's bound extrapolated
// at its own rate from an entry applied before the slow spell would be
// seconds ahead of the log; a new leader started from it would end at
// once a lease the slow leader granted just before it died.
func TestSlowLeaderClockNeverEndsLeasesEarly(t *testing.T) {
	c := New(t, 3, Options{})
	h := NewHistory()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ttl = 2 * time.Second
	l := c.LeaderIndex()
	c.SkewClock(l, 0, 0.5)
	// The gap between the log's time and the followers' clocks grows
	// with the slow spell: let it grow (the scenario itself, not
	// synchronisation).
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
	o.Margin = ttl / 10
	if err := CheckLeases([]LeaseEnd{o}); err != nil {
		t.Fatal(err)
	}
}
