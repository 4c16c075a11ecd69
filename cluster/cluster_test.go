package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
)

func TestAcquireThroughFollower(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	f := tc.follower()
	ctx := ctxT(t, 10*time.Second)

	l1, err := f.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "a", TTLMs: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if l1.Fence == 0 {
		t.Fatalf("fence 0")
	}
	// The follower answers after applying: its own read sees the hold.
	info, err := f.Inspect(ctx, "k", api.ReadOptions{Stale: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Holders) != 1 || info.Holders[0].Owner != "a" || info.Holders[0].Fence != l1.Fence {
		t.Fatalf("follower state %+v", info)
	}
	if _, err := f.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "b", TTLMs: 10000}); !errors.Is(err, api.ErrLocked) {
		t.Fatalf("second owner: %v, want ErrLocked", err)
	}
	if _, err := f.Release(ctx, api.ReleaseRequest{Key: "k", Owner: "b"}); !errors.Is(err, api.ErrNotOwner) && !errors.Is(err, api.ErrNotHeld) {
		t.Fatalf("stranger release: %v", err)
	}
	rr, err := f.Release(ctx, api.ReleaseRequest{Key: "k", Owner: "a"})
	if err != nil || !rr.Released {
		t.Fatalf("release: %+v %v", rr, err)
	}
	l2, err := tc.nodes[0].TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "b", TTLMs: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if l2.Fence <= l1.Fence {
		t.Fatalf("fence %d not above %d", l2.Fence, l1.Fence)
	}
	// Linearizable read through another follower sees b.
	for _, n := range tc.nodes {
		info, err := n.Inspect(ctx, "k", api.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(info.Holders) != 1 || info.Holders[0].Owner != "b" {
			t.Fatalf("node %s sees %+v", n.ID(), info)
		}
	}
}
