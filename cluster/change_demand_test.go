package cluster

import (
	"context"
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

// renewRound extends k0..k<n-1> through nd, pipelined, waits until
// every node holds the new leases and published their indexes as
// applied, and returns the results and the indexes of batch entries.
func renewRound(t *testing.T, tc *testCluster, nd *Node, n int, what string) ([]fsm.Result, map[uint64]bool) {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	futs := make([]fsm.Future, n)
	for i := range n {
		// A request id of its own per round: the same one would be
		// answered from the exactly-once cache.
		futs[i] = nd.ApplyAsync(ctx, &fsm.Command{Op: fsm.OpExtend, Key: fmt.Sprint("k", i), Owner: "o", TTL: 60000, ReqID: fmt.Sprint(what, "-", i)})
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
	for _, x := range tc.nodes {
		tc.waitState(x, 10*time.Second, x.ID()+" holding the renewed leases", func(tab *fsm.Table, now int64) bool {
			for k, d := range want {
				if h, ok := tab.HoldOf(k, "o", now); !ok || h.Deadline != d {
					return false
				}
			}
			return true
		})
		tc.eventually(10*time.Second, x.ID()+" published the renewals as applied", func() bool { return x.AppliedIndex() >= last })
	}
	return res, b
}

// A key watch on a node with no other demand wakes for a batched
// renewal of its key, and its record, idle between two requests of a
// watcher, still counts the next renewal at its exact index.
func TestRenewalWakesKeyWatch(t *testing.T) {
	const n = 50
	tc := renewCluster(t, true, n)
	l, f := tc.leader(10*time.Second), tc.follower()
	const key, at = "k3", 3
	wakes := make(chan uint64, 64)
	ctx := ctxT(t, 30*time.Second)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	// Ends when stop is called or ctx ends with the test. A watcher may wake early (at the
	// floor) and asks again with the index it got, as a client does.
	go func() {
		idx := f.KeyIndex(key)
		for {
			i, err := f.WaitKeyChange(wctx, key, idx)
			if err != nil {
				return
			}
			wakes <- i
			idx = i
		}
	}()
	tc.eventually(10*time.Second, "the watcher waiting", func() bool { return f.KeyWatchers() == 1 })
	res, _ := renewRound(t, tc, l, n, "watched")
	for woke := uint64(0); woke < res[at].Index; {
		select {
		case woke = <-wakes:
		case <-ctx.Done():
			t.Fatalf("the watch did not wake for %s's renewal at %d", key, res[at].Index)
		}
	}
	stop()
	tc.eventually(10*time.Second, "the watcher gone", func() bool { return f.KeyWatchers() == 0 })
	if !f.wantsChanges() {
		t.Fatal("a node keeping a watch record does not want change events")
	}
	res, b := renewRound(t, tc, l, n, "idle record")
	if got := f.KeyIndex(key); got != res[at].Index || !b[got] {
		t.Fatalf("idle record: KeyIndex(%s) = %d, want its batched renewal's %d (batch entries %v)", key, got, res[at].Index, b)
	}
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
	res, b := renewRound(t, tc, l, n, "no demand")
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
	res, b = renewRound(t, tc, l, n, "a follower's demand")
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
