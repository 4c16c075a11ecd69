package lockservice_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster/lockservice"
)

// A Local runs the lock service over one in-process table: the lock
// semantics of a cluster, for tests and single-process use.
func ExampleNewLocal() {
	l, err := lockservice.NewLocal(lockservice.LocalConfig{})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	ctx := context.Background()
	lease, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "report", Owner: "worker-1", TTLMs: 30000})
	if err != nil {
		panic(err)
	}
	_, err = l.TryAcquire(ctx, api.AcquireRequest{Key: "report", Owner: "worker-2", TTLMs: 30000})
	fmt.Println(lease.Owner, lease.Fence > 0)
	fmt.Println("second owner locked out:", errors.Is(err, api.ErrLocked))
	// Output:
	// worker-1 true
	// second owner locked out: true
}
