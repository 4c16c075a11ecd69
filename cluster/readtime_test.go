package cluster

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster/lockservice"
	"github.com/locknode/locknode/fsm"
)

// readTime never evaluates a read at or past a deadline the log has not
// reached, and never before the applied time.
func TestReadTime(t *testing.T) {
	held := fsm.New(fsm.Config{})
	if r := held.Apply(1, &fsm.Command{Op: fsm.OpAcquire, Key: "k", Owner: "o", TTL: 500, Time: 1000}); !r.Granted {
		t.Fatalf("setup acquire: %+v", r)
	}
	expired := fsm.New(fsm.Config{})
	expired.Apply(1, &fsm.Command{Op: fsm.OpAcquire, Key: "k", Owner: "o", TTL: 500, Time: 1000})
	expired.Apply(2, &fsm.Command{Op: fsm.OpTick, Time: 1600})
	empty := fsm.New(fsm.Config{})
	empty.Apply(1, &fsm.Command{Op: fsm.OpTick, Time: 1000})

	for _, tc := range []struct {
		name   string
		table  *fsm.Table
		leader int64
		want   int64
	}{
		{"leader behind the log", held, 900, 1000},
		{"leader at the log", held, 1000, 1000},
		{"nothing due yet", held, 1499, 1499},
		{"lease due at the leader, not in the log", held, 1500, 1499},
		{"leader far ahead", held, 1_000_000, 1499},
		{"expiry in the log", expired, 5000, 5000},
		{"nothing scheduled", empty, 5000, 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := lockservice.ReadTime(tc.table, tc.leader)
			if got != tc.want {
				t.Fatalf("readTime(leader %d) = %d, want %d", tc.leader, got, tc.want)
			}
			// Whatever it reports, it agrees with the table at its own
			// applied time: the instant every later write comes after.
			at, _ := tc.table.Inspect("k", tc.table.Now())
			now, _ := tc.table.Inspect("k", got)
			if len(at.Holders) != len(now.Holders) {
				t.Fatalf("holders at %d: %d, at applied time %d: %d", got, len(now.Holders), tc.table.Now(), len(at.Holders))
			}
		})
	}
}

// jumpClock is a node clock that a test can move forward.
type jumpClock struct{ ahead atomic.Int64 }

func (c *jumpClock) Now() time.Time { return time.Now().Add(time.Duration(c.ahead.Load())) }

// A leader whose clock has passed a lease's deadline before any entry
// carries that time must not read the lease as ended: the next leader
// continues from the log's time and still finds it alive. Regression for
// a chaos failure: a read on a leader that had been paused reported a
// hold free; after the election the owner's extend and release succeeded.
func TestReadNotAheadOfLog(t *testing.T) {
	clocks := make([]*jumpClock, 3)
	i := 0
	tc := newTestCluster(t, 3, func(c *Config) {
		clocks[i] = &jumpClock{}
		c.Clock = clocks[i]
		i++
		// The first Tick of a term is immediate; later ones are at least
		// an hour apart, so the log's time stays behind the leader's.
		c.TickInterval, c.MinTickGap = time.Hour, time.Hour
		// No clock-sync Ticks either: the term's first Tick is the warm
		// hold's.
		c.ClockSyncInterval = -1
	})
	ctx := ctxT(t, 30*time.Second)
	l := tc.leader(10 * time.Second)
	li := tc.index(l)

	// Spend the term's first Tick on a short hold.
	w, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "warm", Owner: "w", TTLMs: 1})
	if err != nil {
		t.Fatal(err)
	}
	tc.waitState(l, 10*time.Second, "the first tick", func(tb *fsm.Table, _ int64) bool {
		return tb.Now() >= w.Deadline
	})

	const ttl = 20_000
	g, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: ttl})
	if err != nil {
		t.Fatal(err)
	}
	// The leader's clock passes the deadline; no entry does.
	clocks[li].ahead.Store(int64(2 * ttl * time.Millisecond))
	info, err := l.Inspect(ctx, "k", api.ReadOptions{})
	if err != nil && !errors.Is(err, api.ErrNotFound) { // not found: read as free
		t.Fatal(err)
	}
	l.mu.RLock()
	logNow := l.table.Now()
	l.mu.RUnlock()
	if logNow >= g.Deadline {
		t.Fatalf("setup: a Tick reached the deadline (log time %d, deadline %d)", logNow, g.Deadline)
	}

	tc.kill(li)
	nl := tc.leader(10 * time.Second)
	ext, err := nl.Extend(ctx, api.ExtendRequest{Key: "k", Owner: "o", TTLMs: ttl})
	if err != nil {
		t.Fatalf("extend after the leader change: %v (the lease is alive in the log)", err)
	}
	if len(info.Holders) != 1 || info.Holders[0].Owner != "o" {
		t.Fatalf("read before the leader change saw holders %+v; the owner then extended it (fence %d) at the new leader", info.Holders, ext.Fence)
	}
	if h := info.Holders[0]; h.TTLMs < 0 || h.TTLMs > ttl {
		t.Fatalf("reported TTL %d outside [0, %d]", h.TTLMs, ttl)
	}
}
