package cluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/fsm/reply"
)

// Locks written with one deadline expire in a few entries of at most
// fsm.DueEventBudget events each (cluster version fsm.VersionBoundedExpiry),
// and the leader proposes each next Tick as soon as the previous one is
// applied: the backlog drains long before one TickInterval or
// ClockSyncInterval per entry would let it, and every node ends with
// none of the keys.
func TestMassExpiryDrainsAtOnce(t *testing.T) {
	const n = 3 * fsm.DueEventBudget / 2 // 2 events each: three entries' worth
	tc := newTestCluster(t, 3, func(c *Config) {
		c.UpgradeCheckInterval = 10 * time.Millisecond
		// Far beyond the test's deadline: only the leader's "due at
		// once" path can propose the Ticks that drain the backlog.
		c.TickInterval = time.Minute
		c.ClockSyncInterval = time.Hour
	})
	for _, nd := range tc.nodes {
		tc.eventually(10*time.Second, nd.ID()+" at the highest cluster version", func() bool {
			return nd.ClusterVersion() == fsm.MaxClusterVersion
		})
	}
	var now int64
	if err := tc.leader(10*time.Second).Read(context.Background(), true, func(_ *fsm.Table, at int64) { now = at }); err != nil {
		t.Fatal(err)
	}
	at := strconv.FormatInt(now+10_000, 10)
	ctx := ctxT(t, 120*time.Second)
	// In chunks, each SET retried through the leader of the moment: a
	// loaded machine may move the leadership meanwhile. A retried SET NX
	// that had been applied answers nil.
	left := make([]int, n)
	for i := range left {
		left[i] = i
	}
	for len(left) > 0 {
		nd := tc.leader(30 * time.Second)
		chunk := left[:min(len(left), 512)]
		futs := make([]fsm.Future, len(chunk))
		for j, i := range chunk {
			futs[j] = nd.ApplyAsync(ctx, &fsm.Command{Op: fsm.OpRedis, Args: [][]byte{
				[]byte("SET"), []byte(fmt.Sprint("mass/", i)), []byte("t"), []byte("NX"), []byte("PXAT"), []byte(at)}})
		}
		var retry []int
		for j, f := range futs {
			r, err := f.Result()
			if err != nil && ctx.Err() == nil {
				retry = append(retry, chunk[j])
				continue
			}
			if err != nil || r.Err != nil || r.Reply.Str != "OK" && r.Reply.Kind != reply.Nil {
				t.Fatalf("SET mass/%d: %+v %v", chunk[j], r, err)
			}
		}
		left = append(retry, left[len(chunk):]...)
	}
	if err := tc.leader(10*time.Second).Read(context.Background(), true, func(tb *fsm.Table, at int64) {
		if got := tb.Stats().Locks; at < now+10_000 && got != n {
			t.Errorf("%d locks before the deadline, want %d", got, n)
		}
	}); err != nil {
		t.Fatal(err)
	}
	ticks := tc.allProposals("tick")
	for _, nd := range tc.nodes {
		// Within 30 s of the deadline, where one TickInterval per entry
		// would take minutes.
		tc.waitState(nd, 45*time.Second, nd.ID()+" with every key expired", func(tb *fsm.Table, _ int64) bool {
			return tb.Stats().Locks == 0 && !tb.HasDueBacklog()
		})
	}
	want := float64((2*n + fsm.DueEventBudget - 1) / fsm.DueEventBudget)
	if got := tc.allProposals("tick") - ticks; got < want {
		t.Fatalf("the expiry took %.0f Ticks, at least %.0f expected", got, want)
	}
}

// TestMassExpiryProbe measures, rather than tests (LOCKNODE_MASS_EXPIRY_PROBE=1): the worst
// latency of a read of the clock and a SET, sent every 10 ms through the leader of an in-process 3-node cluster while
// 60,000 locks written with one deadline expire, at cluster version 1 (one entry expires them
// all) and at the highest (bounded). See bench/results/mass-expiry-2026-11-28.md.
func TestMassExpiryProbe(t *testing.T) {
	if os.Getenv("LOCKNODE_MASS_EXPIRY_PROBE") != "1" {
		t.Skip("a measurement of about a minute: LOCKNODE_MASS_EXPIRY_PROBE=1")
	}
	const n = 60_000
	for _, manual := range []bool{true, false} {
		tc := newTestCluster(t, 3, func(c *Config) {
			c.UpgradeCheckInterval = 10 * time.Millisecond
			c.ManualUpgrade = manual // version 1 until activated by hand
		})
		want := uint32(fsm.MaxClusterVersion)
		if manual {
			want = 1
		}
		l := tc.leader(10 * time.Second)
		tc.eventually(10*time.Second, "the cluster version", func() bool { return l.ClusterVersion() == want })
		clock := func() (now int64) {
			if err := l.Read(context.Background(), true, func(_ *fsm.Table, at int64) { now = at }); err != nil {
				t.Fatal(err)
			}
			return now
		}
		at := clock() + 15_000
		ctx := ctxT(t, 120*time.Second)
		for c := 0; c < n; c += 1000 {
			futs := make([]fsm.Future, 0, 1000)
			for i := c; i < c+1000; i++ {
				futs = append(futs, l.ApplyAsync(ctx, &fsm.Command{Op: fsm.OpRedis, Args: [][]byte{
					[]byte("SET"), []byte(fmt.Sprint("mass/", i)), []byte("t"), []byte("NX"), []byte("PXAT"), []byte(strconv.FormatInt(at, 10))}}))
			}
			for _, f := range futs {
				if _, err := f.Result(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if clock() >= at {
			t.Fatal("the fill took longer than the deadline")
		}
		var worst time.Duration
		var worstAt int64
		for {
			// The clock's read waits for the apply too: timed with the SET.
			t0 := time.Now()
			now := clock()
			if now >= at+5000 {
				break
			}
			if _, err := l.Apply(ctx, &fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("SET"), []byte("probe"), []byte("x")}}); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(t0); d > worst {
				worst, worstAt = d, now-at
			}
			time.Sleep(10 * time.Millisecond) // the probe's pace, not a wait for a condition
		}
		t.Logf("cluster version %d: worst SET %v, sent %d ms from the deadline", want, worst, worstAt)
		for _, nd := range tc.nodes {
			nd.Close()
		}
	}
}
