package compat

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster"
)

// hold is one stay in a critical section, as the holder saw it.
type hold struct {
	key, owner, client string
	fence              uint64    // 0: the holder could not read it
	asked              time.Time // before the acquire was sent
	start, end         time.Time // after it returned; before the release was sent
}

// valid reports whether the holder was certainly inside its lease for
// the whole stay: the lease began at the grant, after asked, and lasts
// ttl (leases never end early, DESIGN.md property 6), so it runs at least
// until asked+ttl; margin covers clock-rate differences.
func (h hold) valid(ttl, margin time.Duration) bool {
	return h.end.Before(h.asked.Add(ttl - margin))
}

// TestMutualExclusionAcrossLeaderKill: redsync mutexes (three pools, one
// per node) and native cluster.Node acquirers contend for the same keys
// while the leader is killed. Every stay in a critical section records
// its fence and interval; no two stays of different grants on one key
// may overlap while both were inside their valid lease, and on each key
// a later stay has a larger fence.
func TestMutualExclusionAcrossLeaderKill(t *testing.T) {
	const (
		ttl    = 4 * time.Second
		margin = 300 * time.Millisecond
		before = 20 // stays recorded before the kill
		after  = 25 // and after it
	)
	tc := newCluster(t, 3)
	keys := []string{uniq("mx-a"), uniq("mx-b")}

	var pools []rsredis.Pool
	for i := range 3 {
		pools = append(pools, rsgoredis.NewPool(goRedis(t, tc.resp[i], 3)))
	}
	rs := redsync.New(pools...)

	var mu sync.Mutex
	var holds []hold
	record := func(h hold) int {
		mu.Lock()
		defer mu.Unlock()
		holds = append(holds, h)
		return len(holds)
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(holds)
	}

	// live returns a running node, rotating by n.
	live := func(n int) *cluster.Node {
		for i := range 3 {
			if nd := tc.node((n + i) % 3); nd != nil {
				return nd
			}
		}
		return nil
	}
	// fenceOf reads the fence of owner's hold on key through a live node
	// (a linearizable read), retrying briefly across the fail-over.
	fenceOf := func(ctx context.Context, key, owner string, n int) uint64 {
		deadline := time.Now().Add(time.Second)
		for i := n; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
			nd := live(i)
			if nd == nil {
				return 0
			}
			rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			info, err := nd.Inspect(rctx, key, api.ReadOptions{})
			cancel()
			if err != nil {
				continue
			}
			for _, h := range info.Holders {
				if h.Owner == owner {
					return h.Fence
				}
			}
			t.Errorf("%s: inside the critical section but %q is not a holder: %+v", key, owner, info.Holders)
			return 0
		}
		return 0
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	var errs atomic.Int64

	for w := range 2 {
		wg.Add(1)
		// Ends when stop is called.
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				key := keys[(w+i)%len(keys)]
				m := rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1<<20),
					redsync.WithRetryDelayFunc(func(int) time.Duration { return time.Duration(3+w*2) * time.Millisecond }))
				asked := time.Now()
				if err := m.LockContext(ctx); err != nil {
					if ctx.Err() == nil {
						errs.Add(1)
					}
					continue
				}
				h := hold{key: key, owner: m.Value(), client: fmt.Sprintf("redsync%d", w), asked: asked, start: time.Now()}
				h.fence = fenceOf(ctx, key, h.owner, w+i)
				h.end = time.Now()
				record(h)
				_, _ = m.UnlockContext(context.Background()) // an unlock lost in the fail-over leaves the lease to expire
			}
		}()
	}
	for w := range 2 {
		wg.Add(1)
		// Ends when stop is called.
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				key := keys[(w+i+1)%len(keys)]
				nd := live(w + i)
				if nd == nil {
					return
				}
				owner := fmt.Sprintf("native%d-%d", w, i)
				asked := time.Now()
				actx, cancel := context.WithTimeout(ctx, 3*time.Second)
				l, err := nd.Acquire(actx, api.AcquireRequest{Key: key, Owner: owner, TTLMs: ttl.Milliseconds(), WaitMs: 2500})
				cancel()
				if err != nil {
					continue // fail-over, wait timeout, or stop: try again
				}
				h := hold{key: key, owner: owner, client: fmt.Sprintf("native%d", w), fence: l.Fence, asked: asked, start: time.Now()}
				// The same read redsync holders do, so both stay alike.
				if f := fenceOf(ctx, key, owner, w+i); f != 0 && f != l.Fence {
					t.Errorf("%s: native grant fence %d, but the table says %d", key, l.Fence, f)
				}
				h.end = time.Now()
				record(h)
				for j := range 3 {
					if nd := live(w + i + j); nd != nil {
						rctx, cancel := context.WithTimeout(context.Background(), time.Second)
						_, err := nd.Release(rctx, api.ReleaseRequest{Key: key, Owner: owner})
						cancel()
						if err == nil || errors.Is(err, api.ErrNotHeld) {
							break
						}
					}
				}
			}
		}()
	}

	eventually(t, 30*time.Second, fmt.Sprintf("%d stays before the kill", before), func() bool { return count() >= before })
	leader := tc.leader(5 * time.Second)
	killedAt := time.Now()
	n0 := count()
	t.Logf("killing leader node %d after %d stays", leader, n0)
	tc.kill(leader)
	eventually(t, 45*time.Second, fmt.Sprintf("%d stays after the kill", after), func() bool { return count() >= n0+after })
	stop()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	bad, afterKill, kinds := checkHolds(holds, ttl, margin, killedAt)
	t.Logf("%d stays, %d judged after the kill; judged per client kind %v", len(holds), afterKill, kinds)
	for _, b := range bad {
		t.Error(b)
	}
	if afterKill < after/2 || kinds["redsync"] == 0 || kinds["native"] == 0 {
		t.Fatalf("vacuous run: %d judged stays after the kill, per client kind %v", afterKill, kinds)
	}
	if errs.Load() > 0 {
		t.Logf("%d redsync Lock calls failed outright (retried)", errs.Load())
	}
}

// checkHolds is the exclusion and fence checker: it returns the
// violations, and how many stays it judged after killedAt, per client kind.
func checkHolds(holds []hold, ttl, margin time.Duration, killedAt time.Time) (bad []string, afterKill int, kinds map[string]int) {
	byKey := map[string][]hold{}
	kinds = map[string]int{}
	for _, h := range holds {
		if !h.valid(ttl, margin) {
			continue // too slow to be sure the lease still ran: no evidence either way
		}
		if h.start.After(killedAt) {
			afterKill++
		}
		kinds[strings.TrimRight(h.client, "0123456789")]++
		byKey[h.key] = append(byKey[h.key], h)
	}
	for key, hs := range byKey {
		sort.Slice(hs, func(i, j int) bool { return hs[i].start.Before(hs[j].start) })
		for i := range hs {
			for j := i + 1; j < len(hs); j++ {
				a, b := hs[i], hs[j]
				if !b.start.Before(a.end) {
					break // sorted by start: no later stay begins before a ends
				}
				if a.owner != b.owner {
					bad = append(bad, fmt.Sprintf("%s: overlap: %s %q fence %d [%v, %v] and %s %q fence %d [%v, %v]", key,
						a.client, a.owner, a.fence, a.start.Sub(killedAt), a.end.Sub(killedAt),
						b.client, b.owner, b.fence, b.start.Sub(killedAt), b.end.Sub(killedAt)))
				}
			}
		}
		// Fences grow with time: a stay that began after another ended
		// holds a later grant.
		for _, a := range hs {
			for _, b := range hs {
				if a.fence == 0 || b.fence == 0 || !a.end.Before(b.start) {
					continue
				}
				if a.fence >= b.fence {
					bad = append(bad, fmt.Sprintf("%s: fence went back: %s fence %d ended before %s fence %d began",
						key, a.client, a.fence, b.client, b.fence))
				}
			}
		}
	}
	return bad, afterKill, kinds
}

// TestCheckHolds: the checker itself finds what it must and only that.
func TestCheckHolds(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	h := func(key, owner string, fence uint64, asked, start, end int) hold {
		return hold{key: key, owner: owner, client: "native0", fence: fence, asked: at(asked), start: at(start), end: at(end)}
	}
	const ttl, margin = time.Second, 100 * time.Millisecond
	for _, tt := range []struct {
		name  string
		holds []hold
		bad   int
	}{
		{"disjoint, fences rising", []hold{h("k", "a", 5, 0, 1, 10), h("k", "b", 7, 5, 11, 20)}, 0},
		{"overlap", []hold{h("k", "a", 5, 0, 1, 10), h("k", "b", 7, 5, 9, 20)}, 1},
		{"overlap on different keys", []hold{h("k", "a", 5, 0, 1, 10), h("j", "b", 7, 5, 9, 20)}, 0},
		{"fence went back", []hold{h("k", "a", 9, 0, 1, 10), h("k", "b", 7, 5, 11, 20)}, 1},
		{"unknown fence is not judged", []hold{h("k", "a", 0, 0, 1, 10), h("k", "b", 7, 5, 11, 20)}, 0},
		{"overlap past the lease is no evidence", []hold{h("k", "a", 5, 0, 1, 950), h("k", "b", 7, 5, 940, 960)}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bad, _, _ := checkHolds(tt.holds, ttl, margin, t0)
			if len(bad) != tt.bad {
				t.Fatalf("violations %q, want %d", bad, tt.bad)
			}
		})
	}
}
