package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// A follower wants the leader's commit push only while something on it
// waits for what other nodes commit.
func TestWantsCommits(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	tc.leader(20 * time.Second)
	f := tc.follower()
	if f.wantsCommits() {
		t.Fatal("an idle follower wants the commit push")
	}
	for _, tt := range []struct {
		name  string
		start func() (end func())
	}{
		{"local waiter", func() func() {
			f.hub.AwaitWaiter("w1")
			return func() { f.hub.StopWaiter("w1") }
		}},
		{"observer", func() func() { return f.hub.CommitDemand() }},
		{"added demand", func() func() { return f.AddCommitDemand(func() bool { return true }) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			end := tt.start()
			if !f.wantsCommits() {
				end()
				t.Fatal("the follower does not want the commit push")
			}
			end()
			if f.wantsCommits() {
				t.Fatal("the follower still wants the commit push after the wait ended")
			}
		})
	}
	remove := f.AddCommitDemand(func() bool { return false })
	defer remove()
	if f.wantsCommits() {
		t.Fatal("a demand that reports false makes the follower want the push")
	}
}

// With CommitTimeout and the clock sync an hour, a follower learns of a
// commit within these tests only from the leader's push or from a commit
// hint: what waits on a follower for others' commits, or for a read,
// must still be answered.
func TestCommitPushOnDemand(t *testing.T) {
	tc := newTestCluster(t, 3, func(cfg *Config) {
		cfg.CommitTimeout = time.Hour
		cfg.ClockSyncInterval = time.Hour
	})
	leader := tc.leader(20 * time.Second)
	f := tc.follower()
	ctx := ctxT(t, 30*time.Second)

	t.Run("read on a follower", func(t *testing.T) {
		for i := 0; i < 3; i++ {
			res, err := leader.Apply(ctx, incr("read-key"))
			if err != nil || res.Err != nil {
				t.Fatalf("incr: %v %q", err, res.Err)
			}
			var got uint64
			err = f.Read(ctx, false, func(tb *fsm.Table, now int64) {
				got = tb.KeyVersion("read-key", now)
			})
			if err != nil {
				t.Fatal(err)
			}
			if got != res.Index {
				t.Fatalf("read on the follower: version %d, want %d", got, res.Index)
			}
		}
	})

	t.Run("hand-off to a waiter on a follower", func(t *testing.T) {
		if _, err := leader.Acquire(ctx, api.AcquireRequest{Key: "h", Owner: "holder", TTLMs: 60000}); err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		const wait = 25 * time.Second
		go func() {
			start := time.Now()
			_, err := f.Acquire(ctx, api.AcquireRequest{Key: "h", Owner: "waiter", TTLMs: 60000, WaitMs: wait.Milliseconds()})
			if d := time.Since(start); err == nil && d > wait/2 {
				// Granted as its wait ended, not by the hand-off.
				err = fmt.Errorf("granted after %v", d)
			}
			got <- err
		}()
		tc.eventually(10*time.Second, "the waiter to queue", func() bool {
			var n int
			_ = leader.Read(ctx, true, func(tb *fsm.Table, now int64) {
				if info, err := tb.Inspect("h", now); err == nil {
					n = len(info.Waiters)
				}
			})
			return n == 1
		})
		if _, err := leader.Release(ctx, api.ReleaseRequest{Key: "h", Owner: "holder"}); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatalf("waiter on the follower: %v", err)
		}
	})

	t.Run("observer on a follower", func(t *testing.T) {
		sess, err := leader.OpenSession(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		obs, err := f.Observe(ctx, "obs")
		if err != nil {
			t.Fatal(err)
		}
		if first := <-obs; first.Value != "" {
			t.Fatalf("first leader %q, want none", first.Value)
		}
		for i := 0; i < 2; i++ {
			v := fmt.Sprintf("v%d", i)
			l, err := leader.Campaign(ctx, api.CampaignRequest{Election: "obs", Value: v, Session: sess.ID})
			if err != nil {
				t.Fatal(err)
			}
			if got := <-obs; got.Value != v {
				t.Fatalf("observed %q, want %q", got.Value, v)
			}
			if err := leader.Resign(ctx, l); err != nil {
				t.Fatal(err)
			}
			if got := <-obs; got.Value != "" {
				t.Fatalf("observed %q after the resign, want none", got.Value)
			}
		}
	})
}
