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
		waitFor(t, "one server waiter", func() bool { return fake.Waiters() == 1 })
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
