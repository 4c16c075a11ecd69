package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
)

// fenceNames names fences by order of first appearance: a fence is the
// index of the entry that granted it, and a node's log holds entries a
// Local's has not (configuration, barriers, clock ticks).
type fenceNames map[uint64]int

func (f fenceNames) name(fence uint64) string {
	if fence == 0 {
		return "none"
	}
	if _, ok := f[fence]; !ok {
		f[fence] = len(f) + 1
	}
	return fmt.Sprintf("#%d", f[fence])
}

// byName is the fence named #i.
func (f fenceNames) byName(i int) uint64 {
	for fence, n := range f {
		if n == i {
			return fence
		}
	}
	return 0
}

// outcomeOf names an answer of the lock API by what a caller can branch
// on: the api sentinel of an error, else the lease's fence, count, keys
// and whether its TTL is the full one asked for.
func (f fenceNames) outcomeOf(l api.Lease, full int64, err error) string {
	if err != nil {
		return sentinelOf(err)
	}
	return fmt.Sprintf("fence=%s count=%d full_ttl=%v keys=%v", f.name(l.Fence), l.Count, l.TTLMs == full, l.Keys)
}

func sentinelOf(err error) string {
	for _, s := range []error{api.ErrLocked, api.ErrNotOwner, api.ErrNotHeld, api.ErrNotFound, api.ErrWaitTimeout,
		api.ErrNoLeader, api.ErrBadRequest, api.ErrSessionExpired, api.ErrStaleFence, api.ErrConflict, api.ErrLimit,
		api.ErrCancelled, api.ErrLockDelay, api.ErrMaxHold, api.ErrOutOfMemory} {
		if errors.Is(err, s) {
			return "error " + s.Error()
		}
	}
	return "error (no sentinel) " + err.Error()
}

// The lock service answers the same over a Node and over a Local: one
// script of requests, run against a one-node cluster and a Local, gives
// the same answer at every step. The Local is the test fakes' base, so
// this is what keeps them honest.
func TestLocalAnswersAsNode(t *testing.T) {
	tc := newTestCluster(t, 1, nil)
	node := tc.leader(10 * time.Second)
	local := newTestLocal(t, LocalConfig{})
	ctx := ctxT(t, 30*time.Second)

	type step struct {
		name string
		run  func(l api.Locker) string
	}
	names := map[api.Locker]fenceNames{node: {}, local: {}}
	try := func(req api.AcquireRequest) func(api.Locker) string {
		return func(l api.Locker) string {
			ls, err := l.TryAcquire(ctx, req)
			return names[l].outcomeOf(ls, req.TTLMs, err)
		}
	}
	release := func(req api.ReleaseRequest) func(api.Locker) string {
		return func(l api.Locker) string {
			r, err := l.Release(ctx, req)
			if err != nil {
				return sentinelOf(err)
			}
			return fmt.Sprintf("released=%v count=%d", r.Released, r.Count)
		}
	}
	extend := func(req api.ExtendRequest) func(api.Locker) string {
		return func(l api.Locker) string {
			ls, err := l.Extend(ctx, req)
			return names[l].outcomeOf(ls, req.TTLMs, err)
		}
	}
	fence := func(res string, token func(fenceNames) uint64) func(api.Locker) string {
		return func(l api.Locker) string {
			r, err := l.FenceCheck(ctx, res, token(names[l]))
			if err != nil {
				return sentinelOf(err)
			}
			return fmt.Sprintf("ok=%v highest=%s", r.OK, names[l].name(r.Highest))
		}
	}
	inspect := func(key string) func(api.Locker) string {
		return func(l api.Locker) string {
			info, err := l.Inspect(ctx, key, api.ReadOptions{})
			if err != nil {
				return sentinelOf(err)
			}
			var hs []string
			for _, h := range info.Holders {
				hs = append(hs, fmt.Sprintf("%s/%s/%d/%s", h.Owner, h.Mode, h.Count, names[l].name(h.Fence)))
			}
			return fmt.Sprintf("kind=%s permits=%d fence=%s holders=%s waiters=%d", info.Kind, info.Permits,
				names[l].name(info.Fence), strings.Join(hs, ","), len(info.Waiters))
		}
	}
	list := func(prefix string) func(api.Locker) string {
		return func(l api.Locker) string {
			r, err := l.List(ctx, api.ListRequest{Prefix: prefix, Limit: 2})
			if err != nil {
				return sentinelOf(err)
			}
			var ks []string
			for _, li := range r.Locks {
				ks = append(ks, li.Key)
			}
			return fmt.Sprintf("%v next=%q", ks, r.Next)
		}
	}
	const ttl = 60000
	steps := []step{
		{"grant", try(api.AcquireRequest{Key: "k", Owner: "a", TTLMs: ttl})},
		{"held by another", try(api.AcquireRequest{Key: "k", Owner: "b", TTLMs: ttl})},
		{"same owner again", try(api.AcquireRequest{Key: "k", Owner: "a", TTLMs: ttl / 2})},
		{"reentrant", try(api.AcquireRequest{Key: "r", Owner: "a", TTLMs: ttl, Reentrant: true})},
		{"reentrant twice", try(api.AcquireRequest{Key: "r", Owner: "a", TTLMs: ttl, Reentrant: true})},
		{"reentrant release", release(api.ReleaseRequest{Key: "r", Owner: "a", Reentrant: true})},
		{"shared", try(api.AcquireRequest{Key: "s", Owner: "x", Mode: api.ModeShared, TTLMs: ttl})},
		{"shared too", try(api.AcquireRequest{Key: "s", Owner: "y", Mode: api.ModeShared, TTLMs: ttl})},
		{"exclusive on shared", try(api.AcquireRequest{Key: "s", Owner: "z", TTLMs: ttl})},
		{"semaphore 1", try(api.AcquireRequest{Key: "sem", Owner: "p", Mode: api.ModeSemaphore, Permits: 2, TTLMs: ttl})},
		{"semaphore 2", try(api.AcquireRequest{Key: "sem", Owner: "q", Mode: api.ModeSemaphore, Permits: 2, TTLMs: ttl})},
		{"semaphore full", try(api.AcquireRequest{Key: "sem", Owner: "r", Mode: api.ModeSemaphore, Permits: 2, TTLMs: ttl})},
		{"semaphore other permits", try(api.AcquireRequest{Key: "sem", Owner: "r", Mode: api.ModeSemaphore, Permits: 3, TTLMs: ttl})},
		{"multi-key", try(api.AcquireRequest{Keys: []string{"m/1", "m/2"}, Owner: "a", TTLMs: ttl})},
		{"multi-key overlap", try(api.AcquireRequest{Keys: []string{"m/2", "m/3"}, Owner: "b", TTLMs: ttl})},
		{"extend by stranger", extend(api.ExtendRequest{Key: "k", Owner: "b", TTLMs: ttl})},
		{"extend", extend(api.ExtendRequest{Key: "k", Owner: "a", TTLMs: 30000})},
		{"inspect", inspect("k")},
		{"inspect semaphore", inspect("sem")},
		{"inspect unknown", inspect("nope")},
		{"list page", list("m/")},
		{"release by stranger", release(api.ReleaseRequest{Key: "k", Owner: "b"})},
		{"release", release(api.ReleaseRequest{Key: "k", Owner: "a"})},
		{"release again", release(api.ReleaseRequest{Key: "k", Owner: "a"})},
		{"force release", release(api.ReleaseRequest{Key: "s", Owner: "nobody", Force: true})},
		{"fence current", fence("db", func(f fenceNames) uint64 { return f.byName(5) })},
		{"fence older", fence("db", func(f fenceNames) uint64 { return f.byName(2) })},
		{"fence never granted", fence("db", func(f fenceNames) uint64 { return f.byName(5) + 1000 })},
		{"empty key", try(api.AcquireRequest{Owner: "a", TTLMs: ttl})},
		{"no ttl", try(api.AcquireRequest{Key: "t", Owner: "a"})},
		{"ttl past the limit", try(api.AcquireRequest{Key: "t", Owner: "a", TTLMs: 1 << 40})},
		{"owner too long", try(api.AcquireRequest{Key: "t", Owner: strings.Repeat("o", 5000), TTLMs: ttl})},
		{"unknown mode", try(api.AcquireRequest{Key: "t", Owner: "a", Mode: "sideways", TTLMs: ttl})},
		{"unknown session", try(api.AcquireRequest{Key: "t", Owner: "a", Session: "0123456789abcdef0123456789abcdef", TTLMs: ttl})},
		{"lock-delay", try(api.AcquireRequest{Key: "d", Owner: "a", TTLMs: ttl, LockDelay: 60000})},
		{"lock-delay release", release(api.ReleaseRequest{Key: "d", Owner: "a"})},
		{"in lock-delay", try(api.AcquireRequest{Key: "d", Owner: "b", TTLMs: ttl})},
		{"keepalive unknown", func(l api.Locker) string {
			_, err := l.KeepAlive(ctx, "0123456789abcdef0123456789abcdef")
			return fmt.Sprint(err == nil, " ", sentinelOf(err))
		}},
		{"session ttl too short", func(l api.Locker) string {
			_, err := l.OpenSession(ctx, 0)
			return sentinelOf(err)
		}},
		{"election without name", func(l api.Locker) string {
			_, err := l.Campaign(ctx, api.CampaignRequest{Value: "v"})
			return sentinelOf(err)
		}},
	}
	for _, st := range steps {
		onNode, onLocal := st.run(node), st.run(local)
		if onNode != onLocal {
			t.Errorf("%s: node answers %q, local %q", st.name, onNode, onLocal)
		} else {
			t.Logf("%s: %s", st.name, onNode)
		}
	}
	// A session and a blocking wait, the parts with ids of their own.
	for _, l := range []api.Locker{node, local} {
		s, err := l.OpenSession(ctx, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "w", Owner: "a", TTLMs: ttl, Session: s.ID}); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(ctx)
		got := make(chan error, 1)
		// Ends when the acquire is answered: after cancel.
		go func() {
			_, err := l.Acquire(wctx, api.AcquireRequest{Key: "w", Owner: "b", TTLMs: ttl})
			got <- err
		}()
		tc.eventually(5*time.Second, "b queued", func() bool {
			info, err := l.Inspect(ctx, "w", api.ReadOptions{})
			return err == nil && len(info.Waiters) == 1
		})
		cancel()
		if err := <-got; !errors.Is(err, api.ErrCancelled) {
			t.Fatalf("%T: wait cut by ctx: %v, want ErrCancelled", l, err)
		}
		if err := l.CloseSession(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Inspect(ctx, "w", api.ReadOptions{}); !errors.Is(err, api.ErrNotFound) {
			t.Fatalf("%T: after the session closed: %v, want ErrNotFound", l, err)
		}
	}
}
