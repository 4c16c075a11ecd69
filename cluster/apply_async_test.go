package cluster

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/fsm/reply"
)

func incr(key string) *fsm.Command {
	return &fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("INCR"), []byte(key)}}
}

// TestApplyAsyncOrder: proposals made one after another without waiting
// commit in call order, on the leader (asynchronously, several per log
// batch) and on a follower (forwarded in shared batches).
func TestApplyAsyncOrder(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	for _, tt := range []struct {
		name string
		node *Node
	}{
		{"leader", tc.leader(10 * time.Second)},
		{"follower", tc.follower()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxT(t, 20*time.Second)
			key := "ctr-" + tt.name
			const n = 200
			futs := make([]fsm.Future, n)
			for i := range futs {
				futs[i] = tt.node.ApplyAsync(ctx, incr(key))
			}
			var last uint64
			for i, f := range futs {
				r, err := f.Result()
				if err != nil {
					t.Fatalf("proposal %d: %v", i, err)
				}
				if r.Reply.Kind != reply.Int || r.Reply.Int != int64(i+1) {
					t.Fatalf("proposal %d: reply %+v, want %d", i, r.Reply, i+1)
				}
				if r.Index <= last {
					t.Fatalf("proposal %d: index %d after %d", i, r.Index, last)
				}
				select {
				case <-f.Done():
				default:
					t.Fatalf("proposal %d: Result returned before Done closed", i)
				}
				last = r.Index
			}
			// A read after the last Result sees every write.
			var got string
			if err := tt.node.Read(ctx, false, func(tb *fsm.Table, now int64) {
				r, _ := tb.Read(now, [][]byte{[]byte("GET"), []byte(key)})
				got = r.Str
			}); err != nil {
				t.Fatal(err)
			}
			if got != fmt.Sprint(n) {
				t.Fatalf("GET %s = %q, want %d", key, got, n)
			}
		})
	}
}

// TestApplyAsyncClosed: a future whose node closed answers ErrClosed
// instead of blocking, and a proposal after the close fails at once.
func TestApplyAsyncClosed(t *testing.T) {
	tc := newTestCluster(t, 1, nil)
	l := tc.leader(10 * time.Second)
	ctx := ctxT(t, 10*time.Second)
	futs := make([]fsm.Future, 50)
	for i := range futs {
		futs[i] = l.ApplyAsync(ctx, incr("c"))
	}
	l.Kill()
	for i, f := range futs {
		done := make(chan error, 1)
		// Ends when Result returns (the test fails first if it never does).
		go func() { _, err := f.Result(); done <- err }()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, api.ErrNoLeader) {
				t.Fatalf("proposal %d: %v", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("proposal %d: Result blocked after Kill", i)
		}
	}
	if _, err := l.ApplyAsync(ctx, incr("c")).Result(); err == nil {
		t.Fatal("proposal after Kill succeeded")
	}
}
