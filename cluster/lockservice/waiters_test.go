package lockservice

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
)

// A cancel that lands after the waiter of a caller's request id was
// granted leaves the hold alone: another attempt of the same request (a
// client's retry after its connection dropped, possibly on another node)
// was answered with that grant, and releasing it would leave the client
// holding a lock that is free.
func TestLateCancelKeepsGrantOfCallersRequestID(t *testing.T) {
	l, err := NewLocal(LocalConfig{TickInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "holder", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	req := api.AcquireRequest{Key: "k", Owner: "client", TTLMs: 60000, WaitMs: 20000, RequestID: "client-req-1"}
	type res struct {
		l   api.Lease
		err error
	}
	got := make(chan res, 1)
	go func() { // the retry that delivers the grant; ends when it returns
		ls, err := l.Acquire(ctx, req)
		got <- res{ls, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		li, err := l.Inspect(ctx, "k", api.ReadOptions{})
		if err == nil && len(li.Waiters) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the retry did not queue: %+v, %v", li, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := l.Release(ctx, api.ReleaseRequest{Key: "k", Owner: "holder"}); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil || r.l.Fence == 0 {
		t.Fatalf("retry: %+v", r)
	}
	// The first attempt's cancel, late: its caller's connection dropped
	// before the grant.
	err = l.cancelWait(req.RequestID, req, make(chan WaiterEvent, 1), 0, context.Canceled)
	if !errors.Is(err, api.ErrCancelled) {
		t.Fatalf("cancelWait = %v, want ErrCancelled", err)
	}
	li, err := l.Inspect(ctx, "k", api.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(li.Holders) != 1 || li.Holders[0].Owner != "client" || li.Holders[0].Fence != r.l.Fence {
		t.Fatalf("after the late cancel the lock is %+v, want held by client with fence %d", li, r.l.Fence)
	}
}
