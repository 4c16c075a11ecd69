package testcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/locknode/locknode/cluster"
)

// envInt reads an integer environment variable, or def.
func envInt(t *testing.T, name string, def uint64) uint64 {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return v
}

// TestChaos runs nemesis schedules against a 3-node cluster under a
// mixed workload and checks every property afterwards. The short suite
// runs a few fixed seeds; `make chaos` sets LOCKNODE_CHAOS_SEEDS (how
// many), LOCKNODE_CHAOS_BASE (first seed) and LOCKNODE_CHAOS_DURATION
// (per schedule). LOCKNODE_CHAOS_SEED=s re-runs exactly seed s.
// LOCKNODE_CHAOS_SNAPSHOTS=n has the nodes snapshot every n entries and
// keep only n behind it, checked every 200ms, so that snapshots, log
// compaction, restores after restart and snapshot installs on lagging
// followers happen under the faults too (with the defaults, a run
// shorter than 30s takes no snapshot at all).
func TestChaos(t *testing.T) {
	list, dur := chaosSeeds(t, 3, 4*time.Second)
	opts := chaosOptions(t)
	for _, seed := range list {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runChaos(t, seed, dur, opts)
		})
	}
}

// chaosOptions are the cluster options of a chaos test: with
// LOCKNODE_CHAOS_SNAPSHOTS=n, snapshots every n entries (see TestChaos).
func chaosOptions(t *testing.T) Options {
	var opts Options
	if snaps := envInt(t, "LOCKNODE_CHAOS_SNAPSHOTS", 0); snaps > 0 {
		opts.Config = func(_ int, c *cluster.Config) {
			c.SnapshotThreshold, c.TrailingLogs, c.SnapshotInterval = snaps, snaps, 200*time.Millisecond
		}
	}
	return opts
}

// chaosSeeds are the seeds and the schedule length of a chaos test:
// seeds from 1 (def of them) and def duration unless the LOCKNODE_CHAOS_*
// variables say otherwise (see TestChaos).
func chaosSeeds(t *testing.T, n uint64, def time.Duration) ([]uint64, time.Duration) {
	seeds := envInt(t, "LOCKNODE_CHAOS_SEEDS", n)
	base := envInt(t, "LOCKNODE_CHAOS_BASE", 1)
	dur := def
	if s := os.Getenv("LOCKNODE_CHAOS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("LOCKNODE_CHAOS_DURATION=%q: %v", s, err)
		}
		dur = d
	}
	list := make([]uint64, 0, seeds)
	if s := os.Getenv("LOCKNODE_CHAOS_SEED"); s != "" {
		list = append(list, envInt(t, "LOCKNODE_CHAOS_SEED", 0))
	} else {
		for i := range seeds {
			list = append(list, base+i)
		}
	}
	return list, dur
}

// TestChaosDisk runs a schedule of disk faults only (full disks, EIO on
// write or fsync, writes torn by a crash) under the chaos workload, and
// checks the same properties; TestChaos interleaves them with the other
// faults.
func TestChaosDisk(t *testing.T) {
	list, dur := chaosSeeds(t, 1, 4*time.Second)
	for _, seed := range list {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			c := runChaos(t, seed, dur, chaosOptions(t), FaultDiskFull, FaultDiskError, FaultTornCrash)
			if c.DiskFaults() == 0 {
				t.Error("the disk nemesis failed no operation")
			}
		})
	}
}

// runChaos plays a schedule of kinds (default: every fault) drawn from
// seed under the chaos workload and checks every property; it returns
// the cluster.
func runChaos(t *testing.T, seed uint64, dur time.Duration, opts Options, kinds ...FaultKind) *Cluster {
	sched := NewSchedule(seed, 3, dur, kinds...)
	t.Logf("nemesis seed %d (re-run: LOCKNODE_CHAOS_SEED=%d go test -race -run TestChaos ./testcluster/)\n%v", seed, seed, sched)
	defer func() {
		if t.Failed() {
			t.Logf("FAILED with nemesis seed %d", seed)
		}
	}()
	opts.Seed = seed
	c := New(t, 3, opts)
	h := NewHistory()
	w := &Workload{Keys: Keys("k", 3), Seed: seed}
	w.Clients = []*Client{c.NativeClient(h, 0, 0), c.NativeClient(h, 1, 1), c.HTTPClient(h, 2),
		c.RESPClient(h, 3, 2, false), c.RESPClient(h, 4, 0, true)}
	durable := []*Client{c.NativeClient(h, 5, 2), c.HTTPClient(h, 6), c.RESPClient(h, 7, 1, false)}
	for _, cl := range append(append([]*Client(nil), w.Clients...), durable...) {
		defer cl.Close()
	}
	applied := c.RecordApplied(w.Keys...)
	defer applied.Stop()

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // ends when stop is called
		defer wg.Done()
		w.Run(ctx)
	}()
	for i, cl := range durable {
		wg.Add(1)
		go func() { // ends when stop is called
			defer wg.Done()
			for j := 0; ctx.Err() == nil; j++ {
				key, owner := fmt.Sprintf("dur-%d-%d", i, j), NewOwner()
				octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
				_, err := cl.TryAcquire(octx, key, owner, 10*time.Minute)
				if err == nil && j%2 == 0 {
					_, err = cl.Release(octx, key, owner)
				}
				cancel()
				if unknown(err) {
					pause(ctx, 100*time.Millisecond)
				}
			}
		}()
	}
	nctx, ncancel := context.WithTimeout(context.Background(), dur+30*time.Second)
	err := RunSchedule(nctx, c, sched)
	ncancel()
	stop()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	ops := h.Ops()
	t.Logf("history: %d ops: %s", len(ops), h.Summary())

	start := time.Now()
	if err := CheckLinearizable(ops, time.Minute); errors.Is(err, ErrCheckTimeout) {
		// The search over the whole history ran out of time, which a
		// key with many unknown outcomes can cause without any
		// violation: check key by key, each with its own longer
		// deadline. A key that is not linearizable, or still too slow
		// to decide, fails the test.
		t.Logf("linearizability: %v; checking key by key", err)
		for _, kc := range RecheckHistory(ops, 5*time.Minute) {
			if kc.Err != nil {
				t.Errorf("linearizability: key %q (%d ops, %d unknown) after %v: %v", kc.Key, kc.Ops, kc.Unknown, kc.Took, kc.Err)
			}
		}
	} else if err != nil {
		t.Errorf("linearizability: %v", err)
	}
	t.Logf("linearizability checked in %v", time.Since(start))
	cctx, ccancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer ccancel()
	if err := CheckFences(ops); err != nil {
		t.Errorf("fences: %v", err)
	}
	for _, err := range applied.Check() {
		t.Error(err)
	}
	read, err := ListReader(cctx, c.Leader(), "dur-")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckDurable(cctx, ops, "dur-", read); err != nil {
		t.Errorf("durability: %v", err)
	}
	if err := c.CheckConverged(cctx); err != nil {
		t.Errorf("convergence: %v", err)
	}
	return c
}

// TestRecheckHistory re-checks a history that CheckLinearizable wrote
// (LOCKNODE_CHAOS_HISTORY=path) one key at a time, with
// LOCKNODE_CHAOS_CHECK_TIMEOUT per key (default 10m): which key made the
// whole check time out, and is it linearizable after all.
func TestRecheckHistory(t *testing.T) {
	path := os.Getenv("LOCKNODE_CHAOS_HISTORY")
	if path == "" {
		t.Skip("LOCKNODE_CHAOS_HISTORY not set")
	}
	timeout := 10 * time.Minute
	if s := os.Getenv("LOCKNODE_CHAOS_CHECK_TIMEOUT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("LOCKNODE_CHAOS_CHECK_TIMEOUT=%q: %v", s, err)
		}
		timeout = d
	}
	ops, err := ReadHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, kc := range RecheckHistory(ops, timeout) {
		if kc.Err != nil {
			t.Errorf("key %q (%d ops, %d unknown) after %v: %v", kc.Key, kc.Ops, kc.Unknown, kc.Took, kc.Err)
		} else if kc.Took > time.Second {
			t.Logf("key %q (%d ops, %d unknown) linearizable, checked in %v", kc.Key, kc.Ops, kc.Unknown, kc.Took)
		}
	}
}
