package compat

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// rueidis with its default options: RESP3 and client-side caching on
// (CLIENT TRACKING ON OPTIN, then CLIENT CACHING YES + MULTI PTTL/GET
// EXEC for each cached read). It refused to connect before the bridge
// had CLIENT TRACKING.

func newRueidis(t *testing.T, opt rueidis.ClientOption) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatalf("rueidis.NewClient: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestRueidisClientSideCaching: a cached GET is served from the local
// cache until a write through another node invalidates it.
func TestRueidisClientSideCaching(t *testing.T) {
	tc := newCluster(t, 3)
	tc.leader(10 * time.Second)
	ctx := ctxT(t, 30*time.Second)
	c := newRueidis(t, rueidis.ClientOption{InitAddress: []string{tc.resp[0]}})
	other := goRedis(t, tc.resp[1], 2)
	key := uniq("rueidis-csc")
	if err := other.Set(ctx, key, "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	get := func() (string, bool) {
		t.Helper()
		r := c.DoCache(ctx, c.B().Get().Key(key).Cache(), time.Minute)
		v, err := r.ToString()
		if err != nil {
			t.Fatalf("DoCache GET: %v", err)
		}
		return v, r.IsCacheHit()
	}
	if v, hit := get(); v != "v1" || hit {
		t.Fatalf("first GET = %q (cache hit %v), want v1 from the server", v, hit)
	}
	if v, hit := get(); v != "v1" || !hit {
		t.Fatalf("second GET = %q (cache hit %v), want v1 from the cache", v, hit)
	}
	if err := other.Set(ctx, key, "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The cache entry lives a minute: v2 within seconds means the
	// invalidation arrived.
	eventually(t, 10*time.Second, "the write through node 1 to invalidate node 0's client cache", func() bool {
		v, _ := get()
		return v == "v2"
	})
	if v, hit := get(); v != "v2" || !hit {
		t.Fatalf("GET after refill = %q (cache hit %v), want v2 from the cache", v, hit)
	}
	// An expiry is an entry too: it invalidates.
	if err := other.Set(ctx, key, "v3", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the write, then the expiry, to invalidate", func() bool {
		r := c.DoCache(ctx, c.B().Get().Key(key).Cache(), time.Minute)
		return rueidis.IsRedisNil(r.Error())
	})
}

// TestRueidisLock: rueidislock with default options but a longer
// per-key timeout (three keys per
// lock on one endpoint, a majority of two; waiters woken by
// invalidations) acquires, excludes a second locker on another node, and
// hands the lock over on release.
func TestRueidisLock(t *testing.T) {
	tc := newCluster(t, 3)
	tc.leader(10 * time.Second)
	ctx := ctxT(t, 60*time.Second)
	newLocker := func(addr string) rueidislock.Locker {
		l, err := rueidislock.NewLocker(rueidislock.LockerOption{
			ClientOption: rueidis.ClientOption{InitAddress: []string{addr}},
			// Each key's script gets 20 ms by default, less than one
			// commit takes on a busy 2-core machine under -race.
			TryNextAfter: 2 * time.Second,
		})
		if err != nil {
			t.Fatalf("NewLocker: %v", err)
		}
		t.Cleanup(l.Close)
		return l
	}
	l1, l2 := newLocker(tc.resp[0]), newLocker(tc.resp[1])
	name := uniq("rueidislock")

	held, release, err := l1.WithContext(ctx, name)
	if err != nil {
		t.Fatalf("l1 acquire: %v", err)
	}
	if _, _, err := l2.TryWithContext(ctx, name); !errors.Is(err, rueidislock.ErrNotLocked) {
		t.Fatalf("l2 TryWithContext while l1 holds = %v, want ErrNotLocked", err)
	}
	// Held past several extend intervals (validity 5 s, extended every
	// 2.5 s): the holder's context stays alive.
	select {
	case <-held.Done():
		t.Fatalf("l1 lost the lock: %v", context.Cause(held))
	case <-time.After(6 * time.Second): // the scenario: outlive one validity
	}

	got := make(chan error, 1)
	// Ends when l2's acquire returns (ctx bounds it).
	go func() {
		_, cancel, err := l2.WithContext(ctx, name)
		if err == nil {
			defer cancel()
		}
		got <- err
	}()
	release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("l2 acquire after l1's release: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("l2 never acquired after l1's release")
	}
}

// TestRueidisSentinel: rueidis in Sentinel mode discovers the master
// through SENTINEL commands on the nodes, confirms it with ROLE, and
// reads and writes through it.
func TestRueidisSentinel(t *testing.T) {
	tc := newCluster(t, 3)
	tc.leader(10 * time.Second)
	ctx := ctxT(t, 30*time.Second)
	c := newRueidis(t, rueidis.ClientOption{
		InitAddress: tc.resp,
		Sentinel:    rueidis.SentinelOption{MasterSet: "any-name"},
	})
	if m := c.Mode(); m != rueidis.ClientModeSentinel {
		t.Fatalf("client mode %v, want sentinel", m)
	}
	key := uniq("rueidis-sentinel")
	if err := c.Do(ctx, c.B().Set().Key(key).Value("v").Nx().Px(10*time.Second).Build()).Error(); err != nil {
		t.Fatalf("SET NX PX through the sentinel client: %v", err)
	}
	if v, err := c.Do(ctx, c.B().Get().Key(key).Build()).ToString(); err != nil || v != "v" {
		t.Fatalf("GET = %q, %v", v, err)
	}
	role, err := c.Do(ctx, c.B().Role().Build()).ToArray()
	if err != nil || len(role) == 0 {
		t.Fatalf("ROLE = %v, %v", role, err)
	}
	if s, _ := role[0].ToString(); s != "master" {
		t.Fatalf("ROLE[0] = %q, want master", s)
	}
	// Kill the node it uses: it discovers another one and goes on.
	info, err := c.Do(ctx, c.B().Info().Section("server").Build()).ToString()
	if err != nil {
		t.Fatalf("INFO server: %v", err)
	}
	victim := -1
	for _, line := range strings.Split(info, "\n") {
		if port, ok := strings.CutPrefix(strings.TrimSpace(line), "tcp_port:"); ok {
			for i, a := range tc.resp {
				if strings.HasSuffix(a, ":"+port) {
					victim = i
				}
			}
		}
	}
	if victim < 0 {
		t.Fatalf("INFO server names no node's port (%v):\n%s", tc.resp, info)
	}
	t.Logf("killing node %d (%s)", victim, tc.resp[victim])
	tc.kill(victim)
	eventually(t, 20*time.Second, "the sentinel client to reach another node", func() bool {
		v, err := c.Do(ctx, c.B().Get().Key(key).Build()).ToString()
		return err == nil && v == "v"
	})
}
