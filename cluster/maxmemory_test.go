package cluster

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// The embedded API past the key space's memory limit: an acquire is
// refused with api.ErrOutOfMemory (fsm.ErrOutOfMemory underneath), also
// when forwarded by a follower; releases and extends still work, and a
// release that makes room lets acquires through again.
func TestEmbeddedOutOfMemory(t *testing.T) {
	tc := newTestCluster(t, 3, func(c *Config) { c.FSM.MaxMemory = 4 << 10 })
	ctx := ctxT(t, 30*time.Second)
	for _, n := range []*Node{tc.leader(10 * time.Second), tc.follower()} {
		var held []string
		var err error
		for i := 0; i < 100 && err == nil; i++ {
			key := n.ID() + "/k" + strconv.Itoa(i)
			if _, err = n.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "o", TTLMs: 60_000}); err == nil {
				held = append(held, key)
			}
		}
		if !errors.Is(err, api.ErrOutOfMemory) || !errors.Is(err, fsm.ErrOutOfMemory) || len(held) < 2 {
			t.Fatalf("%s: after %d locks: %v, want ErrOutOfMemory", n.ID(), len(held), err)
		}
		if _, err := n.Extend(ctx, api.ExtendRequest{Key: held[0], Owner: "o", TTLMs: 90_000}); err != nil {
			t.Fatalf("%s: extend past the limit: %v", n.ID(), err)
		}
		for _, k := range held[len(held)/2:] {
			if _, err := n.Release(ctx, api.ReleaseRequest{Key: k, Owner: "o"}); err != nil {
				t.Fatalf("%s: release past the limit: %v", n.ID(), err)
			}
		}
		if _, err := n.TryAcquire(ctx, api.AcquireRequest{Key: n.ID() + "/again", Owner: "o", TTLMs: 60_000}); err != nil {
			t.Fatalf("%s: acquire after releases: %v", n.ID(), err)
		}
		for _, k := range append(held[:len(held)/2], n.ID()+"/again") {
			if _, err := n.Release(ctx, api.ReleaseRequest{Key: k, Owner: "o"}); err != nil {
				t.Fatalf("%s: release: %v", n.ID(), err)
			}
		}
	}
	st, err := tc.follower().Status(ctx)
	if err != nil || st.KeyspaceMaxBytes != 4<<10 || st.KeyspaceBytes <= 0 {
		t.Fatalf("status %+v %v", st, err)
	}
}
