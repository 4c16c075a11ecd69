package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/testcluster"
)

// nextState receives from ch until a state with want arrives.
func nextState(t *testing.T, ch <-chan api.LockInfo, want string, after uint64) api.LockInfo {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case info, ok := <-ch:
			if !ok {
				t.Fatalf("watch closed before state %q", want)
			}
			if info.State == want && info.Index > after {
				return info
			}
		case <-timeout:
			t.Fatalf("no state %q after index %d within 20s", want, after)
		}
	}
}

// TestWatchAcrossLeaderKill: Watch sees a grant, keeps watching while
// the node it asks (the leader) is killed, sees the force release made
// through the new leader, and closes its channel when ctx ends.
func TestWatchAcrossLeaderKill(t *testing.T) {
	tc := testcluster.New(t, 3, testcluster.Options{NoRESP: true})
	li := tc.LeaderIndex()
	// The leader first: Watch's queries go to it until it dies.
	eps := []string{"http://" + tc.HTTPAddr(li)}
	for i := range 3 {
		if i != li {
			eps = append(eps, "http://"+tc.HTTPAddr(i))
		}
	}
	c, err := client.New(client.Config{Endpoints: eps})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const key = "standby/primary"
	ch, err := c.Watch(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	first := <-ch
	if first.State != api.StateFree || first.Key != key {
		t.Fatalf("first state %+v, want free", first)
	}
	if _, err := tc.Locker(li).TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "primary", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	held := nextState(t, ch, api.StateHeld, first.Index)
	if held.Holders[0].Owner != "primary" {
		t.Fatalf("held by %+v", held.Holders)
	}

	tc.Crash(li)
	nl, err := tc.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.Locker(nl).Release(ctx, api.ReleaseRequest{Key: key, Force: true}); err != nil {
		t.Fatal(err)
	}
	nextState(t, ch, api.StateFree, held.Index)

	cancel()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the channel was not closed after ctx ended")
		}
	}
}

// TestWatchEmbedded: the embedded API's Watch (cluster.Local) sends the
// states of a key as it is taken, released and expires.
func TestWatchEmbedded(t *testing.T) {
	l, err := cluster.NewLocal(cluster.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var w api.LockWatcher = l
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if _, err := w.Watch(ctx, ""); err == nil {
		t.Fatal("Watch of an empty key: no error")
	}
	ch, err := w.Watch(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	first := <-ch
	if first.State != api.StateFree {
		t.Fatalf("first %+v", first)
	}
	if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 2000}); err != nil {
		t.Fatal(err)
	}
	held := nextState(t, ch, api.StateHeld, first.Index)
	nextState(t, ch, api.StateFree, held.Index) // expired
	for deadline := time.Now().Add(10 * time.Second); l.KeyWatchers() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d watchers while one Watch runs", l.KeyWatchers())
		}
	}
	cancel()
	for range ch {
	}
	if l.KeyWatchers() != 0 {
		t.Fatalf("%d watchers after ctx ended", l.KeyWatchers())
	}
}
