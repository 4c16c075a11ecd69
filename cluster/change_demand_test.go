package cluster

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm"
)

// changeLog records the EvChanged events a node applies, by index.
type changeLog struct {
	mu sync.Mutex
	at map[uint64][]string
}

func recordChanges(t *testing.T, nd *Node) *changeLog {
	c := &changeLog{at: map[uint64][]string{}}
	t.Cleanup(nd.Subscribe(func(index uint64, events []fsm.Event) {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, e := range events {
			if e.Kind == fsm.EvChanged {
				c.at[index] = append(c.at[index], e.Key)
			}
		}
	}))
	return c
}

// has reports whether key's change was recorded at index.
func (c *changeLog) has(index uint64, key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.at[index] {
		if k == key {
			return true
		}
	}
	return false
}

// batched returns the indexes that answered two renewals or more (a
// batch entry's) and, for each renewal, its key.
func batched(res []fsm.Result) map[uint64]bool {
	per := map[uint64]int{}
	for _, r := range res {
		per[r.Index]++
	}
	out := map[uint64]bool{}
	for i, c := range per {
		if c > 1 {
			out[i] = true
		}
	}
	return out
}

// A batch of renewals reports its leases' changes only on the nodes
// where something reads them: with no demand none of the three nodes
// emits them (and the key watches' floor still passes the renewals),
// with AddChangeDemand on one follower that node gets every renewal's
// change at its index and the others still none, and every node holds
// the same leases either way.
func TestRenewalChangesOnDemand(t *testing.T) {
	const n = 100
	tc := renewCluster(t, true, n)
	l := tc.leader(10 * time.Second)
	logs := make([]*changeLog, len(tc.nodes))
	for i, nd := range tc.nodes {
		logs[i] = recordChanges(t, nd)
	}
	renew := func(what string) ([]fsm.Result, map[uint64]bool) {
		t.Helper()
		ctx := ctxT(t, 30*time.Second)
		futs := make([]fsm.Future, n)
		for i := range n {
			// A request id of its own per round: the same one would be
			// answered from the exactly-once cache.
			futs[i] = l.ApplyAsync(ctx, &fsm.Command{Op: fsm.OpExtend, Key: fmt.Sprint("k", i), Owner: "o", TTL: 60000, ReqID: fmt.Sprint(what, "-", i)})
		}
		res := make([]fsm.Result, n)
		for i, f := range futs {
			r, err := f.Result()
			if err != nil {
				t.Fatalf("%s: extend k%d: %v", what, i, err)
			}
			res[i] = r
		}
		want := map[string]int64{}
		var last uint64
		for i, r := range res {
			if r.Err != nil || !r.Granted {
				t.Fatalf("%s: extend k%d: %+v", what, i, r)
			}
			want[fmt.Sprint("k", i)] = r.Deadline
			last = max(last, r.Index)
		}
		b := batched(res)
		if len(b) == 0 {
			t.Fatalf("%s: no renewals were coalesced", what)
		}
		for _, nd := range tc.nodes {
			tc.waitState(nd, 10*time.Second, nd.ID()+" holding the renewed leases", func(tab *fsm.Table, now int64) bool {
				for k, d := range want {
					if h, ok := tab.HoldOf(k, "o", now); !ok || h.Deadline != d {
						return false
					}
				}
				return true
			})
			tc.eventually(10*time.Second, nd.ID()+" published the renewals as applied", func() bool { return nd.AppliedIndex() >= last })
		}
		return res, b
	}

	res, b := renew("no demand")
	for i, nd := range tc.nodes {
		for j, r := range res {
			key := fmt.Sprint("k", j)
			if b[r.Index] && logs[i].has(r.Index, key) {
				t.Fatalf("no demand: %s emitted %s's change at %d", nd.ID(), key, r.Index)
			}
			// A key nobody watched answers the floor: at least its
			// renewal's index, though the event was left out.
			if got := nd.KeyIndex(key); got < r.Index {
				t.Fatalf("no demand: %s: KeyIndex(%s) = %d, below its renewal at %d", nd.ID(), key, got, r.Index)
			}
		}
	}

	f := tc.follower()
	remove := f.AddChangeDemand(func() bool { return true })
	res, b = renew("a follower's demand")
	for i, nd := range tc.nodes {
		for j, r := range res {
			key := fmt.Sprint("k", j)
			got := logs[i].has(r.Index, key)
			if nd == f && !got {
				t.Fatalf("demand on %s: %s's change at %d missing (%v; result %+v)", nd.ID(), key, r.Index, logs[i].at[r.Index], r)
			}
			if nd != f && b[r.Index] && got {
				t.Fatalf("demand on %s only: %s emitted %s's change at %d", f.ID(), nd.ID(), key, r.Index)
			}
		}
	}
	remove()
	if f.wantsChanges() {
		t.Fatal("the demand outlived its remove")
	}
}
