package locktest_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
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
}
