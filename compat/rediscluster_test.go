package compat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// Redis Cluster clients, unmodified, against 3 `locknode serve
// --resp-cluster` processes: each locks, extends and releases, then the
// leader's process is killed and the client keeps locking on the new
// master. Lock calls during the election are retried, as an application
// retries them (retryFor); how long that takes is bounded.

// failover bounds how long a client may take to lock again after the
// leader's process is killed: an election (2.4 s with the defaults) plus
// the client's own topology refresh and retry back-off.
const failover = 45 * time.Second

// masterOf asks the node at addr for CLUSTER SLOTS and returns the
// master's address.
func masterOf(ctx context.Context, addr string) (string, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	//lint:ignore SA1019 CLUSTER SLOTS is what go-redis' ClusterClient, ioredis and redis-py read.
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		return "", err
	}
	if len(slots) != 1 || slots[0].Start != 0 || slots[0].End != 16383 || len(slots[0].Nodes) == 0 {
		return "", fmt.Errorf("CLUSTER SLOTS = %+v", slots)
	}
	return slots[0].Nodes[0].Addr, nil
}

// waitMaster waits until every live node's CLUSTER SLOTS names the
// leader's RESP address as master, and all three members appear while
// all live.
func (pc *procCluster) waitMaster(ctx context.Context, leader int) {
	pc.t.Helper()
	want := pc.resp()[leader]
	eventually(pc.t, failover, "every live node to name the leader "+want+" master", func() bool {
		for i, addr := range pc.resp() {
			if !pc.live(i) {
				continue
			}
			if got, err := masterOf(ctx, addr); err != nil || got != want {
				return false
			}
		}
		return true
	})
}

// TestRedisClusterGoRedisRedsync: go-redis ClusterClient given all three
// nodes, redsync over it (one pool: one cluster). A lock held across the
// leader kill is extended and released afterwards; new locks are taken
// on the new master.
func TestRedisClusterGoRedisRedsync(t *testing.T) {
	pc := startProcCluster(t, 3, "--resp-cluster")
	ctx := ctxT(t, 3*time.Minute)
	lead := pc.leader(30 * time.Second)
	pc.waitMaster(ctx, lead)

	// go-redis reloads its topology on MOVED, or every
	// ClusterStateReloadInterval (60 s by default): a master whose process
	// died is dialled until then (docs/redis.md "Redis Cluster clients").
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: pc.resp(), DialTimeout: time.Second,
		ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second, ClusterStateReloadInterval: 2 * time.Second})
	t.Cleanup(func() { cc.Close() })
	// The client routes every slot to the leader. (ForEach* callbacks
	// run concurrently.)
	var mu sync.Mutex
	seen := map[string]bool{}
	if err := cc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		seen[c.Options().Addr] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 {
		t.Fatalf("the client knows nodes %v, want all three", seen)
	}
	var masters []string
	if err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		masters = append(masters, c.Options().Addr)
		return nil
	}); err != nil || len(masters) != 1 || masters[0] != pc.resp()[lead] {
		t.Fatalf("masters %v (%v), want the leader %s", masters, err, pc.resp()[lead])
	}

	rs := redsync.New(rsgoredis.NewPool(cc))
	key := uniq("rc-redsync")
	held := rs.NewMutex(key, redsync.WithExpiry(30*time.Second), redsync.WithTries(1))
	if err := held.LockContext(ctx); err != nil {
		t.Fatalf("lock: %v", err)
	}
	other := rs.NewMutex(key, redsync.WithTries(1))
	if err := other.TryLockContext(ctx); err == nil {
		t.Fatal("a second mutex took a held lock")
	}
	if ok, err := held.ExtendContext(ctx); !ok || err != nil {
		t.Fatalf("extend: %v, %v", ok, err)
	}

	pc.kill(lead)
	t.Logf("killed the leader %s", pc.nodes[lead].id)
	if err := retryFor(failover, func() error {
		ok, err := held.ExtendContext(ctx)
		if err == nil && !ok {
			err = errors.New("not extended")
		}
		return err
	}); err != nil {
		t.Fatalf("extend after the leader kill: %v", err)
	}
	if err := retryFor(failover, func() error {
		if err := other.TryLockContext(ctx); err == nil {
			return errors.New("a second mutex took the lock held across the kill")
		}
		_, err := held.UnlockContext(ctx)
		return err
	}); err != nil {
		t.Fatalf("unlock after the leader kill: %v", err)
	}
	if err := retryFor(failover, func() error { return other.TryLockContext(ctx) }); err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	if _, err := other.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	next := rs.NewMutex(uniq("rc-redsync-after"), redsync.WithExpiry(10*time.Second))
	if err := next.LockContext(ctx); err != nil {
		t.Fatalf("a new lock on the new master: %v", err)
	}
	if ok, err := next.ExtendContext(ctx); !ok || err != nil {
		t.Fatalf("extend on the new master: %v, %v", ok, err)
	}
	if ok, err := next.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("unlock on the new master: %v, %v", ok, err)
	}
	// The survivors name the new leader master, and the client moves there.
	newLead := pc.leader(30 * time.Second)
	pc.waitMaster(ctx, newLead)
	cc.ReloadState(ctx)
	eventually(t, failover, "the client to route to the new master", func() bool {
		var m []string
		err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			m = append(m, c.Options().Addr)
			return nil
		})
		return err == nil && len(m) == 1 && m[0] == pc.resp()[newLead]
	})
}

// TestRedisClusterRueidis: rueidis given the three nodes as InitAddress
// runs as a cluster client; rueidislock (its default three keys, majority
// two) locks, keeps the lock extended past its validity, releases, and
// after the leader kill does it all again on the new master.
func TestRedisClusterRueidis(t *testing.T) {
	pc := startProcCluster(t, 3, "--resp-cluster")
	ctx := ctxT(t, 3*time.Minute)
	pc.waitMaster(ctx, pc.leader(30*time.Second))
	opt := rueidis.ClientOption{InitAddress: pc.resp(), ConnWriteTimeout: 5 * time.Second}

	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatalf("rueidis.NewClient with three addresses: %v", err)
	}
	t.Cleanup(c.Close)
	if n := len(c.Nodes()); n != 3 {
		t.Fatalf("rueidis knows %d nodes, want 3 (a cluster client)", n)
	}

	// Extended every validity/2; a second keeps a busy 2-core machine
	// under -race from missing an extension. TryNextAfter as in
	// TestRueidisLock: one commit can take longer than the default 20 ms.
	// NoLoopTracking as docs/redis.md advises: without it every extension
	// invalidates the holder's own tracked key, and rueidislock answers
	// each invalidation with another extension (on Redis as here), a
	// storm of writes that can starve the election this test waits for.
	const validity = 2 * time.Second
	locker, err := rueidislock.NewLocker(rueidislock.LockerOption{ClientOption: opt, KeyValidity: validity,
		TryNextAfter: 2 * time.Second, NoLoopTracking: true})
	if err != nil {
		t.Fatalf("NewLocker: %v", err)
	}
	t.Cleanup(locker.Close)

	cycle := func(when string) {
		t.Helper()
		name := uniq("rc-rueidislock")
		var lctx context.Context
		var release context.CancelFunc
		if err := retryFor(failover, func() (err error) {
			lctx, release, err = locker.TryWithContext(ctx, name)
			return err
		}); err != nil {
			t.Fatalf("%s: lock: %v", when, err)
		}
		if _, _, err := locker.TryWithContext(ctx, name); !errors.Is(err, rueidislock.ErrNotLocked) {
			t.Fatalf("%s: a second holder: %v, want ErrNotLocked", when, err)
		}
		// Held for two and a half validities: extended in the background.
		select {
		case <-lctx.Done():
			t.Fatalf("%s: lock lost while extended", when)
		case <-time.After(5 * validity / 2):
		}
		if _, _, err := locker.TryWithContext(ctx, name); !errors.Is(err, rueidislock.ErrNotLocked) {
			t.Fatalf("%s: taken over after its first validity: %v", when, err)
		}
		release()
		if err := retryFor(10*time.Second, func() error {
			_, again, err := locker.TryWithContext(ctx, name)
			if err == nil {
				again()
			}
			return err
		}); err != nil {
			t.Fatalf("%s: lock after release: %v", when, err)
		}
	}
	cycle("before the kill")
	lead := pc.leader(30 * time.Second)
	pc.kill(lead)
	t.Logf("killed the leader %s", pc.nodes[lead].id)
	// rueidislock gives a lock up when an extension cannot finish within
	// its validity, as happens to one taken during the election: the
	// cycle starts once the survivors name a new master (the client, still
	// routing to the dead one, has to find it by itself).
	pc.waitMaster(ctx, pc.leader(failover))
	// rueidislock counts a lock's validity from the start of its attempt,
	// and the client routes to the dead master until a command of its
	// fails there and it refreshes (with backoff: over a second): an
	// attempt that spends its validity finding the new master takes a
	// lock it gives up at once. One write through the locker's client
	// moves its routing first.
	cl := locker.Client()
	if err := retryFor(failover, func() error {
		return cl.Do(ctx, cl.B().Set().Key(uniq("rc-probe")).Value("1").Px(10*time.Second).Build()).Error()
	}); err != nil {
		t.Fatalf("a write through the locker's client after the kill: %v", err)
	}
	cycle("after the kill")
}

// TestRedisClusterRedisPy: redis-py's RedisCluster (Debian python3-redis)
// with its Lock: testdata/rediscluster.py.
func TestRedisClusterRedisPy(t *testing.T) {
	py := python(t)
	prog, err := filepath.Abs("testdata/rediscluster.py")
	if err != nil {
		t.Fatal(err)
	}
	pc := startProcCluster(t, 3, "--resp-cluster")
	ctx := ctxT(t, 3*time.Minute)
	lead := pc.leader(30 * time.Second)
	pc.waitMaster(ctx, lead)
	addrs := pc.resp()
	c := startChild(t, "redis-py cluster", "", nil, py, append([]string{prog, uniq("rc-redispy")}, addrs...)...)
	c.expect("master "+addrs[lead], 30*time.Second)
	for _, step := range []string{"acquire", "exclusive", "extend", "release", "held"} {
		c.expect("ok "+step, 30*time.Second)
	}
	pc.kill(lead)
	t.Logf("killed the leader %s", pc.nodes[lead].id)
	c.send("killed")
	for _, step := range []string{"extend after kill", "release after kill", "acquire after kill", "extend after kill 2", "release after kill 2"} {
		c.expect("ok "+step, failover+15*time.Second)
	}
	c.finish(10 * time.Second)
}

// TestRedisClusterIORedis: ioredis' Cluster with redis-semaphore's Mutex
// (testdata/nodelocks/cluster.cjs).
func TestRedisClusterIORedis(t *testing.T) {
	node := needProgram(t, "node")
	mods := nodeModulesOf(t, "testdata/nodelocks", "redis-semaphore")
	script, err := filepath.Abs("testdata/nodelocks/cluster.cjs")
	if err != nil {
		t.Fatal(err)
	}
	pc := startProcCluster(t, 3, "--resp-cluster")
	ctx := ctxT(t, 3*time.Minute)
	lead := pc.leader(30 * time.Second)
	pc.waitMaster(ctx, lead)
	addrs := pc.resp()
	env := append(os.Environ(), "NODE_PATH="+mods)
	c := startChild(t, "ioredis cluster", filepath.Dir(script), env, node, append([]string{script, uniq("rc-ioredis")}, addrs...)...)
	c.expect("master "+addrs[lead], 30*time.Second)
	for _, step := range []string{"acquire", "exclusive", "refresh", "release", "held"} {
		c.expect("ok "+step, 30*time.Second)
	}
	pc.kill(lead)
	t.Logf("killed the leader %s", pc.nodes[lead].id)
	c.send("killed")
	for _, step := range []string{"extend after kill", "release after kill", "acquire after kill", "refresh after kill", "release after kill 2"} {
		c.expect("ok "+step, failover+15*time.Second)
	}
	c.finish(10 * time.Second)
}
