package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster"
)

// A single-node cluster embedded in a program: no network but its own
// loopback port, storage in a directory. Add members later with
// AddVoter, or start more nodes with Config.Join.
func Example() {
	dir, err := os.MkdirTemp("", "locknode-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := cluster.DefaultConfig()
	cfg.ID = "n1"
	cfg.DataDir = dir
	cfg.Bootstrap = true // a new cluster of this node alone
	node, err := cluster.Start(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Close()
	if err := node.WaitLeader(ctx); err != nil {
		fmt.Println(err)
		return
	}

	lease, err := node.TryAcquire(ctx, api.AcquireRequest{Key: "jobs/nightly", Owner: "worker-1", TTLMs: 30000})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The fence is the log index of the grant: pass it to whatever the
	// lock protects, which rejects writes carrying an older one.
	fmt.Println("granted, fence > 0:", lease.Fence > 0)

	_, err = node.TryAcquire(ctx, api.AcquireRequest{Key: "jobs/nightly", Owner: "worker-2", TTLMs: 30000})
	fmt.Println("second owner locked out:", errors.Is(err, api.ErrLocked))

	if _, err := node.Release(ctx, api.ReleaseRequest{Key: "jobs/nightly", Owner: "worker-1"}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("released")
	// Output:
	// granted, fence > 0: true
	// second owner locked out: true
	// released
}
