package mirror

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/locknode/locknode/fsm"
)

func TestMirrorLockAppearsAndReleaseDeletes(t *testing.T) {
	r, c, log, n := leaderMirrorSetup(t)
	ctx := context.Background()
	m := runMirror(t, n, r.addr(), nil)

	res := log.acquire(t, "lock:a", "tok-1", 30_000)
	mirrorWait(t, 5*time.Second, "lock:a in redis", func() (bool, string) {
		v, err := c.Get(ctx, "lock:a").Result()
		return v == "tok-1", fmt.Sprint(v, err)
	})
	pttl, err := c.PTTL(ctx, "lock:a").Result()
	if err != nil || pttl <= 0 || pttl > 30*time.Second {
		t.Fatalf("PTTL lock:a = %v, %v; want within the 30s lease", pttl, err)
	}
	meta, err := c.HGetAll(ctx, "{lock:a}:meta").Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"owner": "tok-1", "fence": strconv.FormatUint(res.Fence, 10),
		"mode": "exclusive", "holders": "1", "owners": `["tok-1"]`, "waiters": "0"}
	for k, v := range want {
		if meta[k] != v {
			t.Errorf("meta %s = %q, want %q (meta %v)", k, meta[k], v, meta)
		}
	}
	if mt, _ := c.PTTL(ctx, "{lock:a}:meta").Result(); mt <= 0 {
		t.Errorf("meta PTTL = %v, want the lease", mt)
	}

	log.release(t, "lock:a", "tok-1")
	mirrorWait(t, 5*time.Second, "lock:a deleted", func() (bool, string) {
		n, err := c.Exists(ctx, "lock:a", "{lock:a}:meta").Result()
		return n == 0 && err == nil, fmt.Sprint(n, err)
	})
	waitMirrored(t, c, m, n, "", "")
	if st := m.Status(); st.Resyncs != 1 || st.Conflicts != 0 {
		t.Errorf("status %+v: want exactly the start-up resync and no conflicts", st)
	}
}

// TestMirrorMeta: the meta hash carries the holder's metadata (a JSON
// object) and grant time, "{}" for a lock taken without metadata, and
// follows a hand-off to the waiter's metadata.
func TestMirrorMeta(t *testing.T) {
	rp, c, log, n := leaderMirrorSetup(t)
	ctx := context.Background()
	runMirror(t, n, rp.addr(), nil)
	res := log.apply(&fsm.Command{Op: fsm.OpAcquire, Key: "lock:m", Owner: "tok-1", TTL: 30_000,
		Meta: fsm.MetaOf(map[string]string{"host": "db1", "pid": "42"})})
	if !res.Granted {
		t.Fatalf("acquire: %+v", res)
	}
	log.apply(&fsm.Command{Op: fsm.OpAcquire, Key: "lock:m", Owner: "tok-2", TTL: 30_000, Wait: 30_000, ReqID: "w",
		Meta: fsm.MetaOf(map[string]string{"host": "db2"})})
	log.acquire(t, "lock:plain", "tok-3", 30_000)
	mirrorWait(t, 5*time.Second, "meta of lock:m and lock:plain", func() (bool, string) {
		a, _ := c.HGetAll(ctx, "{lock:m}:meta").Result()
		b, _ := c.HGetAll(ctx, "{lock:plain}:meta").Result()
		return a["meta"] == `{"host":"db1","pid":"42"}` && a["granted_ms"] == strconv.FormatInt(res.Now, 10) &&
			b["meta"] == "{}" && b["granted_ms"] != "" && b["granted_ms"] != "0", fmt.Sprint(a, b)
	})
	log.release(t, "lock:m", "tok-1")
	mirrorWait(t, 5*time.Second, "lock:m handed to tok-2", func() (bool, string) {
		a, _ := c.HGetAll(ctx, "{lock:m}:meta").Result()
		return a["owner"] == "tok-2" && a["meta"] == `{"host":"db2"}`, fmt.Sprint(a)
	})
}

func TestMirrorSetNXCannotTakeClusterLock(t *testing.T) {
	r, c, log, n := leaderMirrorSetup(t)
	ctx := context.Background()
	m := runMirror(t, n, r.addr(), nil)

	log.acquire(t, "job:1", "owner-A", 20_000)
	waitMirrored(t, c, m, n, "", "")
	ok, err := c.SetNX(ctx, "job:1", "intruder", 10*time.Second).Result()
	if err != nil || ok {
		t.Fatalf("SET NX on a key the cluster holds: ok=%v err=%v; want refused", ok, err)
	}
	// Once the cluster releases it, Redis frees it too.
	log.release(t, "job:1", "owner-A")
	waitMirrored(t, c, m, n, "", "")
	ok, err = c.SetNX(ctx, "job:1", "intruder", 10*time.Second).Result()
	if err != nil || !ok {
		t.Fatalf("SET NX after release: ok=%v err=%v; want granted", ok, err)
	}
}

func TestMirrorSharedAndSemaphore(t *testing.T) {
	r, c, log, n := leaderMirrorSetup(t)
	ctx := context.Background()
	m := runMirror(t, n, r.addr(), nil)

	for _, o := range []string{"r1", "r2"} {
		if res := log.apply(&fsm.Command{Op: fsm.OpAcquire, Key: "rw", Owner: o, Mode: fsm.Shared, TTL: 10_000}); !res.Granted {
			t.Fatalf("shared acquire by %s: %v", o, res.Err)
		}
	}
	for _, o := range []string{"s1", "s2", "s3"} {
		if res := log.apply(&fsm.Command{Op: fsm.OpAcquire, Key: "sem", Owner: o, Mode: fsm.Semaphore, Permits: 3, TTL: 10_000}); !res.Granted {
			t.Fatalf("semaphore acquire by %s: %v", o, res.Err)
		}
	}
	waitMirrored(t, c, m, n, "", "")
	for _, tc := range []struct{ key, value, mode, holders, owners, permits string }{
		{"rw", "r1", "shared", "2", `["r1","r2"]`, "0"},
		{"sem", "s1", "semaphore", "3", `["s1","s2","s3"]`, "3"},
	} {
		if v, _ := c.Get(ctx, tc.key).Result(); v != tc.value {
			t.Errorf("GET %s = %q, want the first holder %q", tc.key, v, tc.value)
		}
		meta, _ := c.HGetAll(ctx, "{"+tc.key+"}:meta").Result()
		if meta["mode"] != tc.mode || meta["holders"] != tc.holders || meta["owners"] != tc.owners || meta["permits"] != tc.permits {
			t.Errorf("%s meta = %v, want mode=%s holders=%s owners=%s permits=%s", tc.key, meta, tc.mode, tc.holders, tc.owners, tc.permits)
		}
	}
	// The first holder leaving keeps the key (the lock is still held).
	log.release(t, "rw", "r1")
	waitMirrored(t, c, m, n, "", "")
	if v, _ := c.Get(ctx, "rw").Result(); v != "r2" {
		t.Errorf("GET rw after r1 left = %q, want r2", v)
	}
}

func TestMirrorPrefixAndFilter(t *testing.T) {
	r, c, log, n := leaderMirrorSetup(t)
	ctx := context.Background()
	// A foreign key under the prefix and a stale mirrored key: the start-up
	// resync removes both; keys outside the prefix stay.
	c.Set(ctx, "mx:job:stale", "old", 0)
	c.Set(ctx, "mx:job:foreign", "x", 0)
	c.Set(ctx, "job:unrelated", "keep", 0)
	log.acquire(t, "job:a", "A", 10_000)
	log.acquire(t, "other:b", "B", 10_000)
	m := runMirror(t, n, r.addr(), func(c *Config) { c.KeyPrefix = "mx:"; c.Filter = "job:" })
	waitMirrored(t, c, m, n, "mx:", "job:")
	for k, want := range map[string]string{"mx:job:a": "A", "job:unrelated": "keep"} {
		if v, _ := c.Get(ctx, k).Result(); v != want {
			t.Errorf("GET %s = %q, want %q", k, v, want)
		}
	}
	if k, _ := c.Exists(ctx, "mx:other:b", "other:b", "mx:job:stale", "mx:job:foreign").Result(); k != 0 {
		t.Errorf("%d keys exist that the filter excludes or the sweep should have removed", k)
	}
}

func TestMirrorEmptyPrefixLeavesUnmarkedKeys(t *testing.T) {
	r, c, _, n := leaderMirrorSetup(t)
	ctx := context.Background()
	// With no prefix only keys carrying a mirror meta hash are the
	// mirror's: a stale mirrored lock goes, an application's key stays.
	c.Set(ctx, "gone", "old-owner", 0)
	c.HSet(ctx, "{gone}:meta", "owner", "old-owner")
	c.Set(ctx, "app:data", "value", 0)
	m := runMirror(t, n, r.addr(), nil)
	waitMirrored(t, c, m, n, "", "")
	if k, _ := c.Exists(ctx, "gone", "{gone}:meta").Result(); k != 0 {
		t.Errorf("stale mirrored key survived the resync")
	}
	if v, _ := c.Get(ctx, "app:data").Result(); v != "value" {
		t.Errorf("an unrelated key was touched: %q", v)
	}
}

func TestMirrorForeignWriteOverwrittenAndCounted(t *testing.T) {
	r, c, log, n := leaderMirrorSetup(t)
	ctx := context.Background()
	m := runMirror(t, n, r.addr(), func(c *Config) { c.VerifyInterval = 30 * time.Millisecond })
	log.acquire(t, "a", "owner-a", 30_000)
	log.acquire(t, "b", "owner-b", 30_000)
	log.acquire(t, "c", "owner-c", 30_000)
	waitMirrored(t, c, m, n, "", "")

	for _, tc := range []struct {
		name    string
		disturb func()
	}{
		{"overwrite", func() { c.Set(ctx, "a", "thief", 0) }},
		{"delete", func() { c.Del(ctx, "b") }},
		{"retype", func() { c.Del(ctx, "c"); c.HSet(ctx, "c", "f", "v") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := m.Status().Conflicts
			tc.disturb()
			mirrorWait(t, 5*time.Second, "the verify pass to repair it", func() (bool, string) {
				st := m.Status()
				d := mirrorMismatch(ctx, c, n, "", "", 50)
				return d == "" && st.Conflicts > before, fmt.Sprintf("conflicts=%d %s", st.Conflicts, d)
			})
		})
	}
	// A batch touching a foreign-written key counts it too.
	c.Set(ctx, "a", "thief", 0)
	before := m.Status().Conflicts
	log.release(t, "a", "owner-a")
	mirrorWait(t, 5*time.Second, "release to delete the foreign value", func() (bool, string) {
		k, _ := c.Exists(ctx, "a").Result()
		return k == 0 && m.Status().Conflicts > before, fmt.Sprint(k, m.Status().Conflicts)
	})
}

func TestMirrorRedisRestartAndFlushAll(t *testing.T) {
	r, c, log, n := leaderMirrorSetup(t)
	ctx := context.Background()
	m := runMirror(t, n, r.addr(), nil)
	for i := range 20 {
		log.acquire(t, fmt.Sprintf("k%d", i), fmt.Sprintf("o%d", i), 60_000)
	}
	waitMirrored(t, c, m, n, "", "")

	owner0 := "o0"
	for _, tc := range []struct {
		name    string
		disturb func()
	}{
		{"flushall", func() {
			if err := c.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}},
		{"restart", func() { r.stop(); r.start() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resyncs := m.Status().Resyncs
			tc.disturb()
			// Changes while (or right after) Redis lost its data.
			log.release(t, "k0", owner0)
			owner0 = "o0-" + tc.name
			log.acquire(t, "k0", owner0, 60_000)
			mirrorWait(t, 10*time.Second, "a resync", func() (bool, string) {
				st := m.Status()
				return st.Resyncs > resyncs, fmt.Sprintf("%+v", st)
			})
			waitMirrored(t, c, m, n, "", "")
		})
	}
	if m.Status().RedisRestarts == 0 {
		t.Errorf("the restart was not noticed through run_id")
	}
}

func TestMirrorRedisDownSourceKeepsGranting(t *testing.T) {
	r := startMirrorRedis(t)
	c := r.client(t)
	log := newMirrorLog()
	n := log.node()
	n.leader.Store(true)
	m := runMirror(t, n, r.addr(), nil)
	log.acquire(t, "x", "before", 60_000)
	waitMirrored(t, c, m, n, "", "")

	r.stop()
	// The cluster does not wait for Redis: every acquire returns at once.
	for i := range 200 {
		start := time.Now()
		log.acquire(t, fmt.Sprintf("down:%d", i), "o", 60_000)
		if d := time.Since(start); d > time.Second {
			t.Fatalf("acquire took %v while Redis was down", d)
		}
	}
	log.release(t, "x", "before")
	mirrorWait(t, 5*time.Second, "the mirror to notice Redis is down", func() (bool, string) {
		st := m.Status()
		return !st.Connected && st.Errors > 0, fmt.Sprintf("%+v", st)
	})
	r.start()
	waitMirrored(t, c, m, n, "", "")
}

func TestMirrorQueueOverflowResyncs(t *testing.T) {
	r := startMirrorRedis(t)
	c := r.client(t)
	log := newMirrorLog()
	n := log.node()
	n.leader.Store(true)
	m := runMirror(t, n, r.addr(), func(c *Config) { c.QueueSize = 16; c.BatchSize = 4 })
	waitMirrored(t, c, m, n, "", "")
	r.stop()
	for i := range 100 {
		log.acquire(t, fmt.Sprintf("q%d", i), "o", 60_000)
	}
	st := m.Status()
	if st.Overflows == 0 || st.QueuedKeys > 16 {
		t.Fatalf("status %+v: want an overflow and at most QueueSize keys queued", st)
	}
	resyncs := st.Resyncs
	r.start()
	waitMirrored(t, c, m, n, "", "")
	if m.Status().Resyncs <= resyncs {
		t.Errorf("no resync after the overflow")
	}
}

func TestMirrorOnDemandResync(t *testing.T) {
	r, c, log, n := leaderMirrorSetup(t)
	ctx := context.Background()
	m := runMirror(t, n, r.addr(), func(c *Config) { c.VerifyInterval = -1 })
	log.acquire(t, "d", "owner-d", 60_000)
	waitMirrored(t, c, m, n, "", "")
	c.Set(ctx, "d", "thief", 0) // no verify pass: only a resync repairs it
	m.Resync()
	mirrorWait(t, 5*time.Second, "the requested resync", func() (bool, string) {
		st := m.Status()
		v, _ := c.Get(ctx, "d").Result()
		return st.Resyncs >= 2 && v == "owner-d", fmt.Sprintf("resyncs=%d GET d=%q", st.Resyncs, v)
	})
	if m.Status().Conflicts == 0 {
		t.Errorf("the resync did not count the foreign write")
	}
}

// TestMirrorLeaderChange moves leadership while locks keep changing; the
// new writer must take over from Redis's index (resuming, since its
// buffer covers that index) and end with every key right. Then no node
// writes for a while and a node that joined from a snapshot after that
// index takes over: its buffer starts too late, so it must resync.
func TestMirrorLeaderChange(t *testing.T) {
	r := startMirrorRedis(t)
	c := r.client(t)
	log := newMirrorLog()
	a, b := log.node(), log.node()
	a.leader.Store(true)
	ma := runMirror(t, a, r.addr(), nil)
	mb := runMirror(t, b, r.addr(), nil)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 4 {
		wg.Add(1)
		// Ends when stop is closed.
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("lc:%d:%d", g, i%8)
				owner := fmt.Sprintf("g%d-%d", g, i)
				if res := log.apply(&fsm.Command{Op: fsm.OpAcquire, Key: key, Owner: owner, TTL: 60_000}); res.Granted && i%3 != 0 {
					log.apply(&fsm.Command{Op: fsm.OpRelease, Key: key, Owner: owner})
				}
			}
		}()
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()
	mirrorWait(t, 10*time.Second, "a to mirror some entries", func() (bool, string) {
		st := ma.Status()
		return st.Writing && st.MirroredIndex > 200, fmt.Sprintf("%+v", st)
	})
	resyncsB := mb.Status().Resyncs
	a.leader.Store(false)
	b.leader.Store(true)
	mirrorWait(t, 10*time.Second, "b to take over and write", func() (bool, string) {
		st := mb.Status()
		return st.Writing && st.Batches > 5, fmt.Sprintf("%+v", st)
	})
	if got := mb.Status().Resyncs; got != resyncsB {
		t.Errorf("b resynced %d times on take-over; its buffer covered Redis's index, so it should resume", got-resyncsB)
	}
	mirrorWait(t, 5*time.Second, "a to stop writing", func() (bool, string) {
		return !ma.Status().Writing, ""
	})

	// Nobody writes while the log moves on; then a node that joined
	// after Redis's index leads.
	b.leader.Store(false)
	mirrorWait(t, 5*time.Second, "b to stop writing", func() (bool, string) { return !mb.Status().Writing, "" })
	stored := mb.Status().MirroredIndex
	mirrorWait(t, 10*time.Second, "the log to move past Redis's index", func() (bool, string) {
		var applied uint64
		_ = a.Read(context.Background(), true, func(t *fsm.Table, _ int64) { applied = t.AppliedIndex() })
		return applied > stored+100, fmt.Sprint(applied, stored)
	})
	late := log.node()
	mc := runMirror(t, late, r.addr(), nil)
	mirrorWait(t, 5*time.Second, "the late node's mirror to start", func() (bool, string) {
		return mc.Status().Running, ""
	})
	late.leader.Store(true)
	mirrorWait(t, 10*time.Second, "the late node to resync and write", func() (bool, string) {
		st := mc.Status()
		return st.Writing && st.Resyncs > 0 && st.Batches > 5, fmt.Sprintf("%+v", st)
	})
	close(stop)
	wg.Wait()
	waitMirrored(t, c, mc, late, "", "")
}

func TestMirrorStatusForms(t *testing.T) {
	r := startMirrorRedis(t)
	c := r.client(t)
	log := newMirrorLog()
	n := log.node()
	n.leader.Store(true)
	m := runMirror(t, n, r.addr(), nil)
	waitMirrored(t, c, m, n, "", "")
	log.acquire(t, "s", "o", 10_000) // streamed, not part of the start-up resync
	waitMirrored(t, c, m, n, "", "")
	st := m.Status()
	mp := st.Map()
	if mp["mirrored_index"] != st.MirroredIndex || mp["synced"] != true || mp["resyncs"] != st.Resyncs {
		t.Errorf("Map() = %v, status %+v", mp, st)
	}
	info := m.InfoText()
	for _, want := range []string{"# Mirror\r\n", "mirror_synced:1\r\n", "mirror_index:" + strconv.FormatUint(st.MirroredIndex, 10) + "\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("InfoText() lacks %q:\n%s", want, info)
		}
	}
	reg := prometheus.NewRegistry()
	for _, col := range m.Collectors() {
		if err := reg.Register(col); err != nil {
			t.Fatalf("register: %v", err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, x := range mf.GetMetric() {
			switch {
			case x.GetGauge() != nil:
				got[mf.GetName()] = x.GetGauge().GetValue()
			case x.GetCounter() != nil:
				got[mf.GetName()] = x.GetCounter().GetValue()
			case x.GetHistogram() != nil:
				got[mf.GetName()] = float64(x.GetHistogram().GetSampleCount())
			}
		}
	}
	if got["locknode_mirror_index"] != float64(st.MirroredIndex) || got["locknode_mirror_resyncs_total"] < 1 ||
		got["locknode_mirror_write_lag_seconds"] < 1 {
		t.Errorf("metrics %v do not match status %+v", got, st)
	}
}

func TestMirrorRunErrors(t *testing.T) {
	r := startMirrorRedis(t)
	log := newMirrorLog()
	n := log.node()
	n.readErr.Store(true)
	cfg := DefaultConfig()
	cfg.Redis = &redis.Options{Addr: r.addr()}
	m, err := New(cfg, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err == nil {
		t.Fatalf("Run with an unreadable source: want an error")
	}
	n.readErr.Store(false)
	m2 := runMirror(t, n, r.addr(), nil)
	mirrorWait(t, 5*time.Second, "Run to start", func() (bool, string) { return m2.Status().Running, "" })
	if err := m2.Run(context.Background()); !errors.Is(err, errMirrorRunning) {
		t.Errorf("second Run: %v, want errMirrorRunning", err)
	}
	if _, err := New(cfg, nil); err == nil {
		t.Errorf("New with a nil source: want an error")
	}
}
