package cluster

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// TestHolderMetaAndTimes: an acquire's metadata comes back from Inspect
// and List on every node, with the grant time (cluster time, close to
// wall time), the last extend and the waiters' metadata and queue times;
// metadata over the limits is refused before anything is proposed.
func TestHolderMetaAndTimes(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	l := tc.leader(10 * time.Second)
	f := tc.follower()
	ctx := ctxT(t, 30*time.Second)
	meta := map[string]string{"host": "db1", "pid": "4242", "cmd": "backup --full"}
	before := time.Now().UnixMilli()
	if _, err := f.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "holder", TTLMs: 60000, Meta: meta}); err != nil {
		t.Fatal(err)
	}
	after := time.Now().UnixMilli()
	if _, err := l.Extend(ctx, api.ExtendRequest{Key: "k", Owner: "holder", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { // ends when the acquire is granted or times out
		_, err := l.Acquire(ctx, api.AcquireRequest{Key: "k", Owner: "waiter", TTLMs: 60000, WaitMs: 20000,
			Meta: map[string]string{"host": "db2"}})
		waited <- err
	}()
	tc.waitState(f, 5*time.Second, "waiter queued", func(t *fsm.Table, now int64) bool {
		li, err := t.Inspect("k", now)
		return err == nil && len(li.Waiters) == 1
	})
	for _, n := range tc.nodes {
		info, err := n.Inspect(ctx, "k", api.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h := info.Holders[0]
		// The cluster clock is within a second of wall time.
		if !reflect.DeepEqual(h.Meta, meta) || h.GrantedMs < before-1000 || h.GrantedMs > after+1000 ||
			h.ExtendedMs < h.GrantedMs {
			t.Fatalf("holder %+v (wall %d..%d)", h, before, after)
		}
		if w := info.Waiters[0]; w.Meta["host"] != "db2" || w.QueuedMs < h.GrantedMs {
			t.Fatalf("waiter %+v", w)
		}
		page, err := n.List(ctx, api.ListRequest{Prefix: "k"})
		if err != nil || len(page.Locks) != 1 || !reflect.DeepEqual(page.Locks[0].Holders[0].Meta, meta) {
			t.Fatalf("list %+v %v", page, err)
		}
	}
	if _, err := f.Release(ctx, api.ReleaseRequest{Key: "k", Owner: "holder"}); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	info, err := f.Inspect(ctx, "k", api.ReadOptions{})
	if err != nil || info.Holders[0].Owner != "waiter" || info.Holders[0].Meta["host"] != "db2" {
		t.Fatalf("after hand-off: %+v %v", info, err)
	}

	big := map[string]string{"note": strings.Repeat("x", api.DefaultMaxMetaValueBytes+1)}
	if _, err := f.TryAcquire(ctx, api.AcquireRequest{Key: "k2", Owner: "o", TTLMs: 1000, Meta: big}); !errors.Is(err, api.ErrLimit) {
		t.Fatalf("oversized metadata: %v", err)
	}
	if _, err := f.Inspect(ctx, "k2", api.ReadOptions{}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("a refused acquire left %v", err)
	}
}
