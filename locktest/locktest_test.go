package locktest_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/httpapi/httpapitest"
	"github.com/locknode/locknode/locktest"
	"github.com/locknode/locknode/testcluster"
)

func newClient(t *testing.T, endpoints []string) *client.Client {
	c, err := client.New(client.Config{
		Endpoints:      endpoints,
		RequestTimeout: 5 * time.Second,
		Retry:          client.RetryPolicy{MaxAttempts: 8, BaseDelay: 10 * time.Millisecond, MaxDelay: 200 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The fake the HTTP tests use must itself keep the contract, or tests
// built on it prove little.
func TestFake(t *testing.T) {
	fake := httpapitest.NewFake()
	locktest.Run(t, func(*testing.T) api.Locker { return fake })
}

// The lock service over one in-process table keeps the contract as a
// node does (the Fake above is a thin wrapper of it).
func TestLocal(t *testing.T) {
	l, err := cluster.NewLocal(cluster.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	locktest.Run(t, func(*testing.T) api.Locker { return l })
}

func TestClientOverFake(t *testing.T) {
	srv := httpapitest.NewServer(t, httpapitest.NewFake())
	c := newClient(t, []string{srv.URL})
	locktest.Run(t, func(*testing.T) api.Locker { return c })
}

// Embedded and remote: the same suite against a real 3-node cluster,
// once through cluster.Node directly (round-robin over the nodes, so
// followers forward) and once through client.Client over every node's
// HTTP API.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	tc := testcluster.New(t, 3, testcluster.Options{})
	t.Run("embedded", func(t *testing.T) {
		var n atomic.Int32
		locktest.Run(t, func(*testing.T) api.Locker { return tc.Locker(int(n.Add(1)) % tc.N()) })
	})
	t.Run("remote", func(t *testing.T) {
		c := newClient(t, tc.Endpoints())
		locktest.Run(t, func(*testing.T) api.Locker { return c })
	})
	t.Run("membership over HTTP", func(t *testing.T) {
		c := newClient(t, tc.Endpoints())
		n := tc.Node(1)
		// Re-adding a member with its own address changes nothing.
		if err := c.AddVoter(context.Background(), n.ID(), n.Addr()); err != nil {
			t.Fatal(err)
		}
		st, err := c.Status(context.Background())
		if err != nil || len(st.Members) != 3 {
			t.Fatalf("status %+v %v", st, err)
		}
	})
	// Last, as it crashes a node: a client lock handle keeps its lock
	// through a leader crash, renewing through the surviving nodes.
	t.Run("handle survives a leader crash", func(t *testing.T) {
		ctx := context.Background()
		c, other := newClient(t, tc.Endpoints()), newClient(t, tc.Endpoints())
		const ttl = 5 * time.Second
		l, err := c.Lock(ctx, "handle/k", client.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		lead, err := tc.WaitLeader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		crashed := time.Now()
		tc.Crash(lead)
		deadline := time.Now().Add(20 * time.Second)
		for !l.SafeDeadline().After(crashed.Add(ttl - ttl/10)) {
			if time.Now().After(deadline) || l.State() != client.Held {
				t.Fatalf("no renewal after the crash; state %v, cause %v", l.State(), context.Cause(l.Context()))
			}
			time.Sleep(20 * time.Millisecond)
		}
		if l.State() != client.Held {
			t.Fatalf("state %v", l.State())
		}
		info, err := other.Inspect(ctx, "handle/k", api.ReadOptions{})
		if err != nil || len(info.Holders) != 1 || info.Holders[0].Owner != l.Owner() || info.Holders[0].Fence != l.Fence() {
			t.Fatalf("after the crash: %+v %v", info, err)
		}
		if _, err := other.TryLock(ctx, "handle/k"); !errors.Is(err, api.ErrLocked) {
			t.Fatalf("another client got a held lock: %v", err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		l2, err := other.TryLock(ctx, "handle/k")
		if err != nil || l2.Fence() <= l.Fence() {
			t.Fatalf("after unlock: %v", err)
		}
		l2.Unlock(ctx)
	})
}
