package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// A leader crash: held locks keep their fences, queued waiters keep
// their place, and new grants resume (fenced above everything before)
// once a new leader is elected.
func TestLeaderCrash(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	ctx := ctxT(t, 30*time.Second)
	old := tc.leader(10 * time.Second)
	var f *Node
	for _, n := range tc.nodes {
		if n != old {
			f = n
			break
		}
	}
	held, err := f.TryAcquire(ctx, api.AcquireRequest{Key: "held", Owner: "h", TTLMs: 60000})
	if err != nil {
		t.Fatal(err)
	}
	// A waiter queued through the follower survives the crash.
	got := make(chan error, 1)
	var waited api.Lease
	go func() { // ends when the acquire returns (ctx bounds it)
		var err error
		waited, err = f.Acquire(ctx, api.AcquireRequest{Key: "held", Owner: "w", TTLMs: 60000, WaitMs: 20000})
		got <- err
	}()
	tc.waitState(f, 5*time.Second, "waiter queued", func(t *fsm.Table, now int64) bool {
		li, err := t.Inspect("held", now)
		return err == nil && len(li.Waiters) == 1
	})

	crashed := time.Now()
	tc.kill(tc.index(old))
	// The request reaches no leader until one is elected; it is retried.
	l2, err := f.TryAcquire(ctx, api.AcquireRequest{Key: "after", Owner: "a", TTLMs: 60000})
	if err != nil {
		t.Fatalf("acquire after crash: %v", err)
	}
	t.Logf("first grant %v after the leader crash", time.Since(crashed))
	if l2.Fence <= held.Fence {
		t.Fatalf("new fence %d not above %d", l2.Fence, held.Fence)
	}
	info, err := f.Inspect(ctx, "held", api.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Holders) != 1 || info.Holders[0].Owner != "h" || info.Holders[0].Fence != held.Fence || len(info.Waiters) != 1 {
		t.Fatalf("after crash: %+v", info)
	}
	if _, err := f.Release(ctx, api.ReleaseRequest{Key: "held", Owner: "h"}); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if waited.Fence <= l2.Fence {
		t.Fatalf("waiter fence %d not above %d", waited.Fence, l2.Fence)
	}
}

// Leader failover time, median over several crashes.
func TestFailoverTime(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	var times []time.Duration
	for i := range 3 {
		tc := newTestCluster(t, 3, nil)
		ctx := ctxT(t, 30*time.Second)
		old := tc.leader(10 * time.Second)
		f := tc.nodes[(tc.index(old)+1)%3]
		if _, err := f.TryAcquire(ctx, api.AcquireRequest{Key: "warm", Owner: "o", TTLMs: 1000}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		tc.kill(tc.index(old))
		if _, err := f.TryAcquire(ctx, api.AcquireRequest{Key: fmt.Sprint("k", i), Owner: "o", TTLMs: 1000}); err != nil {
			t.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	t.Logf("time to first grant after a leader crash: %v", times)
}

// A request forwarded to a leader that dies returns at once: those in
// flight fail with an unknown outcome (no request id), the others are
// retried at the new leader.
func TestFailFastOnLeaderDeath(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	old := tc.leader(10 * time.Second)
	f := tc.nodes[(tc.index(old)+1)%3]
	ctx := ctxT(t, 30*time.Second)

	var killed time.Time
	var killMu sync.Mutex
	type outcome struct {
		err error
		at  time.Time
	}
	results := make(chan outcome, 1000)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() { // ends after its first success once the leader was killed
			defer wg.Done()
			for i := 0; ; i++ {
				_, err := f.Apply(ctx, &fsm.Command{Op: fsm.OpAcquire, Key: fmt.Sprintf("k%d-%d", w, i), Owner: "o", TTL: 60000})
				killMu.Lock()
				k := killed
				killMu.Unlock()
				if !k.IsZero() {
					select {
					case results <- outcome{err, time.Now()}:
					default:
						t.Errorf("more than %d failures after the crash: %v", cap(results), err)
						return
					}
					if err == nil || ctx.Err() != nil {
						return
					}
				}
			}
		}()
	}
	// Let requests flow, then crash the leader under them.
	tc.waitState(f, 5*time.Second, "some traffic", func(t *fsm.Table, now int64) bool { return t.Stats().Locks >= 20 })
	killMu.Lock()
	killed = time.Now()
	killMu.Unlock()
	tc.kill(tc.index(old))
	wg.Wait()
	close(results)
	var fast, retried int
	var slowest time.Duration
	for r := range results {
		d := r.at.Sub(killed)
		if r.err != nil {
			if !errors.Is(r.err, api.ErrNoLeader) {
				t.Errorf("error does not wrap ErrNoLeader: %v", r.err)
			}
			if d > 2*time.Second {
				t.Errorf("failed only after %v: %v", d, r.err)
			}
			fast++
			slowest = max(slowest, d)
			continue
		}
		retried++
		if d > 5*time.Second {
			t.Errorf("succeeded only after %v", d)
		}
	}
	t.Logf("after the crash: %d requests failed (slowest %v after it), %d succeeded at the new leader", fast, slowest, retried)
}

// Requests on the embedded API ride out an election within their ctx, as
// the remote client does: sent right after the leader dies, each waits
// for the new leader and succeeds, however short RetryTimeout is. Without
// a deadline, RetryTimeout still bounds the wait. Regression:
// TestFailoverTime's TryAcquire failed with "no leader known" on a busy
// machine when the election outlasted RetryTimeout.
func TestEmbeddedRidesOutElection(t *testing.T) {
	tc := newTestCluster(t, 3, func(c *Config) { c.RetryTimeout = time.Millisecond })
	ctx := ctxT(t, 30*time.Second)
	old := tc.leader(10 * time.Second)
	f := tc.nodes[(tc.index(old)+1)%3]
	for _, k := range []string{"held", "extended"} {
		if _, err := f.TryAcquire(ctx, api.AcquireRequest{Key: k, Owner: "o", TTLMs: 60_000}); err != nil {
			t.Fatal(err)
		}
	}
	ops := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"try-acquire", func(ctx context.Context) error {
			_, err := f.TryAcquire(ctx, api.AcquireRequest{Key: "new", Owner: "o", TTLMs: 60_000})
			return err
		}},
		{"acquire", func(ctx context.Context) error {
			_, err := f.Acquire(ctx, api.AcquireRequest{Key: "waited", Owner: "o", TTLMs: 60_000, WaitMs: 20_000})
			return err
		}},
		{"release", func(ctx context.Context) error {
			_, err := f.Release(ctx, api.ReleaseRequest{Key: "held", Owner: "o"})
			return err
		}},
		{"extend", func(ctx context.Context) error {
			_, err := f.Extend(ctx, api.ExtendRequest{Key: "extended", Owner: "o", TTLMs: 60_000})
			return err
		}},
		{"inspect", func(ctx context.Context) error {
			_, err := f.Inspect(ctx, "extended", api.ReadOptions{})
			return err
		}},
	}
	tc.kill(tc.index(old))
	// Without a deadline, RetryTimeout bounds the wait: nobody leads yet
	// (elections take far longer than RetryTimeout here).
	if _, err := f.TryAcquire(context.Background(), api.AcquireRequest{Key: "nodeadline", Owner: "o", TTLMs: 1000}); !errors.Is(err, api.ErrNoLeader) {
		t.Fatalf("without a deadline during the election: %v; want api.ErrNoLeader after RetryTimeout", err)
	}
	errs := make(chan error, len(ops))
	for _, op := range ops {
		// Ends when the call returns (success or ctx).
		go func() {
			if err := op.call(ctx); err != nil {
				errs <- fmt.Errorf("%s during the election: %w", op.name, err)
				return
			}
			errs <- nil
		}()
	}
	for range ops {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
