package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

const scaleTTL = time.Hour

// fillScript takes one lock per key: SET KEYS[i] ARGV[i+1] NX PX ARGV[1].
var fillScript = redis.NewScript(`local n = 0
for i = 1, #KEYS do
  if redis.call('SET', KEYS[i], ARGV[i+1], 'NX', 'PX', ARGV[1]) then n = n + 1 end
end
return n`)

// fillConns: the bridge answers one connection's commands one at a time
// (each waits for its commit), so only many connections fill the raft
// group commit.
const fillConns = 128

// fillBatch is the keys per pipeline (or per script).
const fillBatch = 100

// fillLocks takes n locks (SET key token NX PX 1h), pipelined over conns
// connections, and checks every answer.
// With byScript, each batch is one EVAL doing SET NX PX per key (one
// log entry per batch instead of one per lock).
// Connection c sends to addrs[c%len(addrs)].
func fillLocks(ctx context.Context, addrs []string, n, conns, pipe int, byScript bool) error {
	var rdbs []*redis.Client
	for _, a := range addrs {
		rdb := redis.NewClient(&redis.Options{Addr: a, PoolSize: conns, ReadTimeout: 60 * time.Second, WriteTimeout: 60 * time.Second})
		defer rdb.Close()
		rdbs = append(rdbs, rdb)
	}
	var wg sync.WaitGroup
	errc := make(chan error, conns)
	for c := 0; c < conns; c++ {
		wg.Add(1)
		// Ends when its share of keys is written or a command fails.
		go func() {
			defer wg.Done()
			rdb := rdbs[c%len(rdbs)]
			for lo := c * pipe; lo < n; lo += conns * pipe {
				hi := min(lo+pipe, n)
				if err := retry(ctx, func() error { return fillBatchOnce(ctx, rdb, lo, hi, byScript) }); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	return <-errc
}

// retries counts batches the scale workload had to send again (no leader
// for a moment: TRYAGAIN); SET NX by the same token is idempotent.
var retries atomic.Int64

// retry runs f until it succeeds, for up to a minute.
func retry(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := f()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		retries.Add(1)
		time.Sleep(50 * time.Millisecond)
	}
}

// fillBatchOnce takes the locks lo..hi-1 once.
func fillBatchOnce(ctx context.Context, rdb *redis.Client, lo, hi int, byScript bool) error {
	if byScript {
		keys, toks := make([]string, 0, hi-lo), make([]any, 0, hi-lo+1)
		toks = append(toks, scaleTTL.Milliseconds())
		for k := lo; k < hi; k++ {
			keys = append(keys, scaleKey(k))
			toks = append(toks, scaleToken(k))
		}
		n, err := fillScript.Run(ctx, rdb, keys, toks...).Int()
		if err != nil || n != hi-lo {
			return fmt.Errorf("fill script: %d of %d locks: %v", n, hi-lo, err)
		}
		return nil
	}
	cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k := lo; k < hi; k++ {
			p.SetNX(ctx, scaleKey(k), scaleToken(k), scaleTTL)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, cmd := range cmds {
		if ok, err := cmd.(*redis.BoolCmd).Result(); err != nil || !ok {
			return fmt.Errorf("SET NX %v: %v %v", cmd.Args()[1], ok, err)
		}
	}
	return nil
}

func scaleKey(k int) string   { return fmt.Sprintf("bench/held/%07d", k) }
func scaleToken(k int) string { return fmt.Sprintf("owner-%07d", k) }

// serving reports nil once addr answers a read of a held lock with its
// owner and grants a new lock.
func serving(ctx context.Context, rdb *redis.Client, n int, probe string) error {
	k := n / 2
	v, err := rdb.Get(ctx, scaleKey(k)).Result()
	if err != nil {
		return err
	}
	if v != scaleToken(k) {
		return fmt.Errorf("GET %s = %q, want %q", scaleKey(k), v, scaleToken(k))
	}
	ok, err := rdb.SetNX(ctx, probe, "probe", 10*time.Second).Result()
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("probe lock not granted")
	}
	return nil
}

// scaleLocknode holds n locks on a 3-node cluster and measures RSS per
// node, the snapshot on disk, and the time from restarting every node
// (after kill -9) until the cluster serves.
// The fill's connections send to the nodes fillTargets names (lnTargets).
func scaleLocknode(ctx context.Context, s *settings, dir string, n int, snapWait time.Duration, byScript bool, fillTargets string) (result, []string, error) {
	r := result{Type: "run", Backend: "locknode", Workload: fmt.Sprintf("scale-%d", n), Run: 1, Metrics: map[string]float64{}}
	c, err := newLNCluster(s.locknode, dir, 3)
	if err != nil {
		return r, nil, err
	}
	defer c.stop()
	if err := c.start(ctx); err != nil {
		return r, nil, err
	}
	var cmds []string
	for i := range c.nodes {
		cmds = append(cmds, shellJoin(c.argv(i)))
	}
	l, err := c.leader(ctx)
	if err != nil {
		return r, cmds, err
	}
	targets, err := lnTargets(ctx, c, fillTargets)
	if err != nil {
		return r, cmds, err
	}
	var addrs []string
	for _, i := range targets {
		addrs = append(addrs, c.nodes[i].resp)
	}
	t0 := time.Now()
	if err := fillLocks(ctx, addrs, n, fillConns, fillBatch, byScript); err != nil {
		return r, cmds, fmt.Errorf("fill: %w", err)
	}
	fill := time.Since(t0)
	r.Metrics["fill_s"] = fill.Seconds()
	r.Metrics["fill_locks_per_s"] = float64(n) / fill.Seconds()
	logf("scale: %d locks held in %.1fs (%.0f/s)", n, fill.Seconds(), float64(n)/fill.Seconds())
	st, err := c.status(ctx, l)
	if err != nil {
		return r, cmds, err
	}
	r.Metrics["locks_after_fill"] = float64(st.Locks)
	if err := c.waitCaughtUp(ctx, (l+1)%3, 60*time.Second); err != nil {
		return r, cmds, err
	}
	if err := c.waitCaughtUp(ctx, (l+2)%3, 60*time.Second); err != nil {
		return r, cmds, err
	}
	for i, nd := range c.nodes {
		rss, _ := rssBytes(nd.proc.pid())
		r.Metrics[fmt.Sprintf("rss_mb_after_fill_%s", nd.id)] = float64(rss) / (1 << 20)
		_ = i
	}
	// A snapshot that holds every lock: push the log past the snapshot
	// threshold, then wait for raft's periodic check (30-60s by default).
	filled := st.AppliedIndex
	if err := churn(ctx, c.nodes[l].resp, 9000); err != nil {
		return r, cmds, err
	}
	snapStart := time.Now()
	werr := waitFor(ctx, snapWait, "snapshot of every lock", func(context.Context) error {
		for i := range c.nodes {
			if _, idx := c.latestSnapshot(i); idx < filled {
				return fmt.Errorf("node %s: newest snapshot at index %d < %d", c.nodes[i].id, idx, filled)
			}
		}
		return nil
	})
	if werr != nil {
		r.Note = werr.Error()
	}
	r.Metrics["snapshot_wait_s"] = time.Since(snapStart).Seconds()
	r.Metrics["batches_retried_no_leader"] = float64(retries.Load())
	var maxRSS float64
	for i, nd := range c.nodes {
		size, idx := c.latestSnapshot(i)
		r.Metrics["snapshot_mb_"+nd.id] = float64(size) / (1 << 20)
		r.Metrics["snapshot_index_"+nd.id] = float64(idx)
		// The raft log is raft-wal's segment files (64 MiB, preallocated:
		// their size says how many segments, the blocks how much is
		// written) plus wal-meta.db under DataDir/wal; raft.db is only
		// the stable store (term, vote).
		walSize, walDisk, walFiles := dirUsage(filepath.Join(nd.data, "wal"))
		r.Metrics["wal_mb_"+nd.id] = float64(walSize) / (1 << 20)
		r.Metrics["wal_disk_mb_"+nd.id] = float64(walDisk) / (1 << 20)
		r.Metrics["wal_files_"+nd.id] = float64(walFiles)
		r.Metrics["raftdb_mb_"+nd.id] = float64(fileSize(filepath.Join(nd.data, "raft.db"))) / (1 << 20)
		rss, _ := rssBytes(nd.proc.pid())
		r.Metrics["rss_mb_"+nd.id] = float64(rss) / (1 << 20)
		peak, _ := peakRSSBytes(nd.proc.pid())
		r.Metrics["rss_peak_mb_"+nd.id] = float64(peak) / (1 << 20)
		r.Metrics["rss_peak_mb_max"] = max(r.Metrics["rss_peak_mb_max"], float64(peak)/(1<<20))
		maxRSS = max(maxRSS, float64(rss)/(1<<20))
	}
	r.Metrics["rss_mb_max"] = maxRSS
	logf("scale: RSS per node max %.0f MB (peak so far %.0f MB); snapshot %.1f MB; wal %.0f MB (%.0f MB on disk)", maxRSS, r.Metrics["rss_peak_mb_max"],
		r.Metrics["snapshot_mb_"+c.nodes[l].id], r.Metrics["wal_mb_"+c.nodes[l].id], r.Metrics["wal_disk_mb_"+c.nodes[l].id])

	// Crash every node, start them all again, and time until serving.
	for i := range c.nodes {
		c.kill9(i)
	}
	t1 := time.Now()
	errs := make(chan error, 3)
	for i := range c.nodes {
		// Ends when the node printed its address line or failed.
		go func() { errs <- c.startNode(ctx, i) }()
	}
	var rdbs []*redis.Client
	for _, nd := range c.nodes {
		rdb := redis.NewClient(&redis.Options{Addr: nd.resp, MaxRetries: -1, DialTimeout: 200 * time.Millisecond, ReadTimeout: 2 * time.Second})
		defer rdb.Close()
		rdbs = append(rdbs, rdb)
	}
	probe := fmt.Sprintf("bench/probe/%d", time.Now().UnixNano())
	serr := waitEvery(ctx, 120*time.Second, 20*time.Millisecond, "restart", func(ctx context.Context) error {
		var last error
		for _, rdb := range rdbs {
			if last = serving(ctx, rdb, n, probe); last == nil {
				return nil
			}
		}
		return last
	})
	restart := time.Since(t1)
	for range c.nodes {
		if err := <-errs; err != nil && serr == nil {
			serr = err
		}
	}
	if serr != nil {
		return r, cmds, serr
	}
	r.Metrics["restart_to_serving_s"] = restart.Seconds()
	logf("scale: restart of all 3 nodes to serving %.2fs", restart.Seconds())
	if err := c.waitHealthy(ctx, 60*time.Second); err != nil {
		return r, cmds, err
	}
	if l, err = c.leader(ctx); err == nil {
		if st, err := c.status(ctx, l); err == nil {
			r.Metrics["locks_after_restart"] = float64(st.Locks)
		}
	}
	maxRSS = 0
	for _, nd := range c.nodes {
		rss, _ := rssBytes(nd.proc.pid())
		r.Metrics["rss_mb_after_restart_"+nd.id] = float64(rss) / (1 << 20)
		maxRSS = max(maxRSS, float64(rss)/(1<<20))
	}
	r.Metrics["rss_mb_after_restart_max"] = maxRSS
	return r, cmds, nil
}

// churn sends n SET/DEL pairs of one scratch key, pipelined, to grow the
// log.
func churn(ctx context.Context, addr string, n int) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 60 * time.Second})
	defer rdb.Close()
	for done := 0; done < n; done += 500 {
		err := retry(ctx, func() error {
			_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for k := 0; k < 250; k++ {
					p.Set(ctx, "bench/churn", "x", time.Minute)
					p.Del(ctx, "bench/churn")
				}
				return nil
			})
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// scaleRedis is the same on one redis-server (RDB saved, then kill -9
// and restart loading it), for reference.
func scaleRedis(ctx context.Context, s *settings, dir string, n int) (result, []string, error) {
	r := result{Type: "run", Backend: "redis", Workload: fmt.Sprintf("scale-%d", n), Run: 1, Metrics: map[string]float64{}}
	p, addr, argv, err := startRedis(ctx, s, dir, "redis-scale", false)
	if err != nil {
		return r, nil, err
	}
	cmds := []string{shellJoin(argv)}
	defer func() { p.kill(syscall.SIGKILL, 0) }()
	t0 := time.Now()
	if err := fillLocks(ctx, []string{addr}, n, 8, 500, false); err != nil {
		return r, cmds, err
	}
	r.Metrics["fill_s"] = time.Since(t0).Seconds()
	r.Metrics["fill_locks_per_s"] = float64(n) / time.Since(t0).Seconds()
	rss, _ := rssBytes(p.pid())
	r.Metrics["rss_mb_max"] = float64(rss) / (1 << 20)
	// SAVE of a million keys blocks for seconds: no 3s read timeout here.
	rdb := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 5 * time.Minute})
	if err := rdb.Save(ctx).Err(); err != nil {
		rdb.Close()
		return r, cmds, err
	}
	rdb.Close()
	r.Metrics["snapshot_mb"] = float64(fileSize(filepath.Join(dir, "redis-scale", "dump.rdb"))) / (1 << 20)
	p.kill(syscall.SIGKILL, 0)
	t1 := time.Now()
	p, err = startProc("redis-scale", filepath.Join(dir, "redis-scale.2.log"), argv, nil, nil)
	if err != nil {
		return r, cmds, err
	}
	rdb = redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	probe := fmt.Sprintf("bench/probe/%d", time.Now().UnixNano())
	if err := waitEvery(ctx, 120*time.Second, 20*time.Millisecond, "redis restart", func(ctx context.Context) error { return serving(ctx, rdb, n, probe) }); err != nil {
		return r, cmds, err
	}
	r.Metrics["restart_to_serving_s"] = time.Since(t1).Seconds()
	return r, cmds, nil
}
