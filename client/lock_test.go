package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/httpapi/httpapitest"
)

func TestLockRenewsPastItsTTL(t *testing.T) {
	fake := httpapitest.NewFake()
	c := newClient(t, httpapitest.NewServer(t, fake).URL)
	const ttl = time.Second
	start := time.Now()
	l, err := c.Lock(context.Background(), "k", client.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	// Renewals every TTL/3: after four of them the first lease would have
	// expired on the server without them. (The machine may stall for
	// 100ms+ under load, hence the generous TTL.)
	waitFor(t, "four renewals", func() bool { return fake.Calls("Extend") >= 4 })
	if time.Since(start) < ttl {
		t.Fatalf("four renewals within %v: renewing too often", time.Since(start))
	}
	if l.State() != client.Held || l.Context().Err() != nil {
		t.Fatalf("state %v, ctx %v", l.State(), l.Context().Err())
	}
	if owner, fence, ok := fake.Holder("k"); !ok || owner != l.Owner() || fence != l.Fence() {
		t.Fatalf("server holder %q/%d, handle %q/%d", owner, fence, l.Owner(), l.Fence())
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := fake.Holder("k"); ok {
		t.Fatal("still held after Unlock")
	}
	if l.State() != client.Released || !errors.Is(context.Cause(l.Context()), client.ErrUnlocked) {
		t.Fatalf("after unlock: %v %v", l.State(), context.Cause(l.Context()))
	}
	select {
	case <-l.Lost():
	default:
		t.Fatal("Lost() not closed after Unlock")
	}
	if err := l.Unlock(context.Background()); !errors.Is(err, api.ErrNotHeld) {
		t.Fatalf("second Unlock: %v", err)
	}
}

// The heart of the handle: when the cluster becomes unreachable, the
// handle must enter Jeopardy and then Lost while the server still holds
// the lock for it — before anyone else could be granted it.
func TestJeopardyAndLostFireBeforeTheServerDeadline(t *testing.T) {
	for _, mode := range []struct {
		name string
		m    int32
	}{{"connections refused", httpapitest.Down}, {"requests hang", httpapitest.Hang}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			const ttl = time.Second
			fake := httpapitest.NewFake()
			srv := httpapitest.NewServer(t, fake)
			c := newClient(t, srv.URL)
			l, err := c.Lock(context.Background(), "k", client.WithTTL(ttl))
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "a renewal", func() bool { return fake.Calls("Extend") >= 1 })
			srv.SetMode(mode.m)
			// From now on nothing reaches the fake: its deadline is final.
			info, err := fake.Inspect(context.Background(), "k", api.ReadOptions{})
			if err != nil || len(info.Holders) != 1 {
				t.Fatal(info, err)
			}
			serverDeadline := time.UnixMilli(info.Holders[0].Deadline)

			<-l.Context().Done()
			if st := l.State(); st != client.Jeopardy {
				t.Fatalf("state at context end = %v", st)
			}
			if !errors.Is(context.Cause(l.Context()), client.ErrJeopardy) {
				t.Fatalf("cause %v", context.Cause(l.Context()))
			}
			// Jeopardy is due TTL/3 before the safe deadline, itself a
			// drift margin before the server's: the server must still
			// hold the lock for us (tolerates ~400ms of scheduling delay).
			if owner, _, ok := fake.Holder("k"); !ok || owner != l.Owner() {
				t.Fatal("Jeopardy came after the server dropped the hold")
			}
			// The deadline Lost fires at is computed from the send time, so
			// it is at least the drift margin (100ms) before the server's.
			if safe := l.SafeDeadline(); serverDeadline.Sub(safe) < 90*time.Millisecond {
				t.Fatalf("safe deadline %v, server deadline %v", safe, serverDeadline)
			}
			<-l.Lost()
			if l.State() != client.Lost || !errors.Is(context.Cause(l.Context()), client.ErrJeopardy) {
				t.Fatalf("state %v cause %v", l.State(), context.Cause(l.Context()))
			}
			if time.Now().Before(l.SafeDeadline()) {
				t.Fatal("Lost before the safe deadline")
			}
		})
	}
}

func TestLostWhenTheServerSaysNotOwner(t *testing.T) {
	fake := httpapitest.NewFake()
	c := newClient(t, httpapitest.NewServer(t, fake).URL)
	l, err := c.Lock(context.Background(), "k", client.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Release(context.Background(), api.ReleaseRequest{Key: "k", Force: true}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("not lost")
	}
	if l.State() != client.Lost || !errors.Is(context.Cause(l.Context()), client.ErrLost) || !errors.Is(context.Cause(l.Context()), api.ErrNotHeld) {
		t.Fatalf("state %v cause %v", l.State(), context.Cause(l.Context()))
	}
	if err := l.Unlock(context.Background()); !errors.Is(err, api.ErrNotHeld) {
		t.Fatalf("unlock of a lost lock: %v", err)
	}
}

func TestTryLockAndOptionsCheck(t *testing.T) {
	ctx := context.Background()
	fake := httpapitest.NewFake()
	c := newClient(t, httpapitest.NewServer(t, fake).URL)
	l, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	if _, err := c.TryLock(ctx, "k"); !errors.Is(err, api.ErrLocked) {
		t.Fatalf("second TryLock: %v", err)
	}
	if _, err := c.Lock(ctx, "k", client.WithWait(30*time.Millisecond)); !errors.Is(err, api.ErrWaitTimeout) {
		t.Fatalf("Lock with a short wait: %v", err)
	}
	for _, o := range []client.LockOption{client.WithTTL(0), client.WithTTL(15 * time.Millisecond), client.WithWait(-1)} {
		if _, err := c.Lock(ctx, "x", o); !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("bad option accepted: %v", err)
		}
	}
	if _, err := c.Lock(ctx, ""); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("empty key: %v", err)
	}
	if n := fake.Calls("Acquire"); n != 1 {
		t.Fatalf("bad options reached the server: %d acquires", n)
	}
	// Shared holds coexist.
	r1, err := c.TryLock(ctx, "rw", client.WithShared())
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c.TryLock(ctx, "rw", client.WithShared())
	if err != nil {
		t.Fatal(err)
	}
	if r1.Owner() == r2.Owner() || r1.Fence() == r2.Fence() {
		t.Fatal("two holds share an owner or fence")
	}
}

func TestSessions(t *testing.T) {
	ctx := context.Background()
	fake := httpapitest.NewFake()
	c := newClient(t, httpapitest.NewServer(t, fake).URL)
	s, err := c.NewSession(ctx, 900*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two keep-alives", func() bool { return fake.Calls("KeepAlive") >= 2 })
	select {
	case <-s.Done():
		t.Fatalf("session ended: %v", s.Err())
	default:
	}
	l, err := c.Lock(ctx, "k", client.WithSession(s), client.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	fake.ExpireSession(s.ID())
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("session not done after expiry")
	}
	if !errors.Is(s.Err(), client.ErrSessionEnd) || !errors.Is(s.Err(), api.ErrSessionExpired) {
		t.Fatalf("session err %v", s.Err())
	}
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("lock bound to the session not lost")
	}
	if !errors.Is(context.Cause(l.Context()), client.ErrSessionEnd) {
		t.Fatalf("lock cause %v", context.Cause(l.Context()))
	}

	s2, err := c.NewSession(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.KeepAlive(ctx, s2.ID()); !errors.Is(err, api.ErrSessionExpired) {
		t.Fatalf("closed session still alive: %v", err)
	}
	if _, err := c.NewSession(ctx, time.Second, client.WithKeepAliveEvery(2*time.Second)); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("keep-alive slower than the TTL accepted: %v", err)
	}
}

// N goroutines of one Client wait for one key: the server sees one
// waiter, the goroutines get the lock one at a time in arrival order,
// each with its own owner and a larger fence.
func TestCoalescingSharesOneServerWaiter(t *testing.T) {
	const n = 8
	ctx := context.Background()
	fake := httpapitest.NewFake()
	c := newClient(t, httpapitest.NewServer(t, fake).URL)
	if _, err := fake.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "outsider", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}

	type grant struct {
		who   int
		owner string
		fence uint64
	}
	var (
		mu       sync.Mutex
		grants   []grant
		inside   atomic.Int32
		maxWait  atomic.Int32
		failures = make(chan error, n)
		wg       sync.WaitGroup
	)
	for i := range n {
		wg.Add(1)
		// Ends after its Lock/Unlock.
		go func() {
			defer wg.Done()
			l, err := c.Lock(ctx, "k", client.WithTTL(5*time.Second))
			if err != nil {
				failures <- err
				return
			}
			if inside.Add(1) != 1 {
				failures <- fmt.Errorf("goroutine %d: two local holders at once", i)
			}
			if w := int32(fake.Waiters()); w > maxWait.Load() {
				maxWait.Store(w)
			}
			mu.Lock()
			grants = append(grants, grant{i, l.Owner(), l.Fence()})
			mu.Unlock()
			inside.Add(-1)
			if err := l.Unlock(ctx); err != nil {
				failures <- err
			}
		}()
		// Queue them one by one so the local order is known.
		waitFor(t, "goroutine to queue", func() bool { return c.LocalWaiters("k") == i+1 })
		if w := fake.Waiters(); w != 1 {
			t.Fatalf("%d goroutines waiting, %d server waiters", i+1, w)
		}
	}
	if calls := fake.Calls("Acquire"); calls != 1 {
		t.Fatalf("%d acquire requests for %d waiting goroutines", calls, n)
	}
	if _, err := fake.Release(ctx, api.ReleaseRequest{Key: "k", Owner: "outsider"}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Error(err)
	}
	if len(grants) != n {
		t.Fatalf("%d grants", len(grants))
	}
	owners := map[string]bool{}
	for i, g := range grants {
		if g.who != i {
			t.Errorf("grant %d went to goroutine %d: not FIFO", i, g.who)
		}
		if i > 0 && g.fence <= grants[i-1].fence {
			t.Errorf("fence %d after %d", g.fence, grants[i-1].fence)
		}
		owners[g.owner] = true
	}
	if len(owners) != n {
		t.Errorf("%d distinct owners for %d holds", len(owners), n)
	}
	if m := maxWait.Load(); m > 1 {
		t.Errorf("up to %d server waiters during hand-offs", m)
	}
	if _, _, ok := fake.Holder("k"); ok || fake.Waiters() != 0 || c.LocalWaiters("k") != 0 {
		t.Fatal("state left behind")
	}
}

func TestCoalescedWaitersLeaveCleanly(t *testing.T) {
	ctx := context.Background()
	fake := httpapitest.NewFake()
	c := newClient(t, httpapitest.NewServer(t, fake).URL)
	if _, err := fake.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "outsider", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	short := make(chan error, 1)
	// Ends when its wait runs out.
	go func() {
		_, err := c.Lock(ctx, "k", client.WithWait(50*time.Millisecond))
		short <- err
	}()
	cctx, cancel := context.WithCancel(ctx)
	cancelled := make(chan error, 1)
	// Ends when cancel() is called.
	go func() {
		_, err := c.Lock(cctx, "k", client.WithWait(time.Minute))
		cancelled <- err
	}()
	waitFor(t, "two local waiters", func() bool { return c.LocalWaiters("k") == 2 })
	if err := <-short; !errors.Is(err, api.ErrWaitTimeout) {
		t.Fatalf("short wait: %v", err)
	}
	if fake.Waiters() != 1 {
		t.Fatal("the server waiter went while a goroutine still waits")
	}
	cancel()
	if err := <-cancelled; !errors.Is(err, api.ErrCancelled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	waitFor(t, "the server waiter to go", func() bool { return fake.Waiters() == 0 })
	// A later Lock starts afresh.
	if _, err := fake.Release(ctx, api.ReleaseRequest{Key: "k", Owner: "outsider"}); err != nil {
		t.Fatal(err)
	}
	l, err := c.Lock(ctx, "k", client.WithWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	l.Unlock(ctx)
}
