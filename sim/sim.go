package sim

import (
	"context"
	"errors"
	"fmt"
	mathrand "math/rand"
	"os"
	"sync"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/locknode/locknode/testcluster"
)

// Config is one simulated schedule.
type Config struct {
	// Seed draws everything: the fault schedule, the workload, network
	// latencies and message faults, raft's election timeouts and every
	// crypto/rand draw (owner tokens, request ids).
	Seed uint64
	// Duration is the simulated length of the fault schedule (default
	// 10s); the run then heals the cluster and checks it.
	Duration time.Duration
	// Nodes in the cluster (default 3).
	Nodes int
	// Kinds of faults the schedule draws from (default: every kind,
	// disk faults included).
	Kinds []testcluster.FaultKind
	// Think is the longest pause of a workload client between two lock
	// sessions (default 100ms; negative: none). The work per simulated
	// second, and so the speed, follows from it.
	Think time.Duration
	// CheckTimeout bounds the linearizability search over the whole
	// history (default 1m); when it runs out, each key is searched again
	// with five times as long.
	CheckTimeout time.Duration
	// Expect, when set, makes a violation a finding rather than a
	// failure: it goes to Result.Problems and t is not failed (the
	// mutation check, which wants the checkers to object).
	Expect bool
	// Replay is the command line printed with a failure, %d for the seed
	// (default: the go test command of TestSim).
	Replay string
}

func (c *Config) defaults() {
	if c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.Nodes <= 0 {
		c.Nodes = 3
	}
	if len(c.Kinds) == 0 {
		c.Kinds = []testcluster.FaultKind{
			testcluster.FaultPartition, testcluster.FaultIsolate, testcluster.FaultCrash,
			testcluster.FaultKillLeader, testcluster.FaultPause, testcluster.FaultSkew, testcluster.FaultLoss,
			testcluster.FaultDiskFull, testcluster.FaultDiskError, testcluster.FaultTornCrash,
			testcluster.FaultClockJump,
		}
	}
	if c.CheckTimeout <= 0 {
		c.CheckTimeout = time.Minute
	}
	if c.Think == 0 {
		c.Think = 100 * time.Millisecond
	}
	if c.Replay == "" {
		c.Replay = "go test -count=1 -run '^TestSim$' ./sim/ -sim.seed=%d -sim.duration=" + c.Duration.String()
	}
}

// Result is what one schedule did.
type Result struct {
	Seed      uint64
	Simulated time.Duration // virtual time from the first node's start to the last check
	Wall      time.Duration
	Check     time.Duration // wall time of the linearizability check (in Wall)
	Ops       int
	Failed    bool
	// Problems are the violations found (with Expect; otherwise they
	// failed t).
	Problems []string
}

// Run plays one schedule on a cluster in a synctest bubble and checks
// every property; a violation fails t with the seed and the command that
// replays it. Call it from a test, outside any bubble.
func Run(t *testing.T, cfg Config) (res Result) {
	t.Helper()
	cfg.defaults()
	res.Seed = cfg.Seed
	wall := time.Now()
	var ops []testcluster.Op
	rep := &report{t: t, expect: cfg.Expect}
	defer func() {
		res.Wall = time.Since(wall)
		res.Problems = rep.problems
		res.Failed = t.Failed()
		if res.Failed {
			t.Logf("FAILED: seed %d; replay: "+cfg.Replay, cfg.Seed, cfg.Seed)
		}
	}()
	// raft draws its election timeouts from math/rand's global source;
	// seeded here (the test binary sets GODEBUG randseednop=0), each run
	// draws the same sequence, in whatever order its goroutines ask.
	//lint:ignore SA1019 raft reads the global source; only Seed sets it
	mathrand.Seed(int64(cfg.Seed))
	// Owner tokens, request ids and campaign tokens come from crypto/rand.
	cryptotest.SetGlobalRandom(t, cfg.Seed)
	synctest.Test(t, func(t *testing.T) {
		// Registered first, so it runs after every other cleanup: the
		// client package gives back unwanted grants in goroutines that
		// end on their own within a retry and a request timeout; time
		// stops once the bubble's cleanups are done, so they must end
		// before. Not counted as simulated time.
		t.Cleanup(func() { time.Sleep(stragglers) })
		start := time.Now()
		rep.t = t
		ops = runBubble(t, rep, cfg)
		rep.t = nil
		res.Simulated = time.Since(start)
	})
	res.Ops = len(ops)
	rep.t = t
	if t.Failed() || ops == nil {
		return res
	}
	// Outside the bubble: porcupine's search is CPU work whose deadline
	// must be real time.
	lin := time.Now()
	checkHistory(rep, ops, cfg.CheckTimeout)
	res.Check = time.Since(lin)
	return res
}

// runBubble starts the cluster, plays the schedule under the workload,
// heals, and runs the checks that need the cluster; it returns the
// history for the rest.
func runBubble(t *testing.T, rep *report, cfg Config) []testcluster.Op {
	sched := testcluster.NewSchedule(cfg.Seed, cfg.Nodes, cfg.Duration, cfg.Kinds...)
	nw := NewNetwork(cfg.Seed)
	c := testcluster.New(t, cfg.Nodes, testcluster.Options{Seed: cfg.Seed, Network: nw, LogLevel: logLevel(),
		SimulatedDisk: true, Config: snapshotOften})
	quietMetrics()
	h := testcluster.NewHistory()
	w := &testcluster.Workload{Keys: testcluster.Keys("k", 3), Seed: cfg.Seed, Think: max(cfg.Think, 0)}
	w.Clients = []*testcluster.Client{c.NativeClient(h, 0, 0), c.NativeClient(h, 1, 1%cfg.Nodes), c.HTTPClient(h, 2),
		c.RESPClient(h, 3, 2%cfg.Nodes, false), c.ScriptClient(h, 4, 0), c.RawHTTPClient(h, 8, 1%cfg.Nodes)}
	durable := []*testcluster.Client{c.NativeClient(h, 5, 2%cfg.Nodes), c.HTTPClient(h, 6), c.RESPClient(h, 7, 1%cfg.Nodes, false)}
	for _, cl := range append(append([]*testcluster.Client(nil), w.Clients...), durable...) {
		defer cl.Close()
	}
	// What users touch, on a history of its own: Go handles renewing
	// (session-bound, max-hold, semaphore permits), campaigners watching
	// Done, holds nobody renews, all writing through the fence middleware.
	sh := testcluster.NewHistory()
	surf := c.NewSurfaces(sh, testcluster.SurfaceConfig{Seed: cfg.Seed})
	// Grant order and semaphore bounds, from what each node applied.
	applied := c.RecordApplied(append(append([]string(nil), w.Keys...), surf.LockKeys()...)...)
	defer applied.Stop()

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // ends when stop is called
		defer wg.Done()
		w.Run(ctx)
	}()
	wg.Add(1)
	go func() { // ends when stop is called
		defer wg.Done()
		surf.Run(ctx)
	}()
	for i, cl := range durable {
		wg.Add(1)
		go func() { // ends when stop is called
			defer wg.Done()
			durableWriter(ctx, cl, i, max(cfg.Think, time.Millisecond))
		}()
	}
	nctx, ncancel := context.WithTimeout(context.Background(), cfg.Duration+30*time.Second)
	err := testcluster.RunSchedule(nctx, c, sched)
	ncancel()
	stop()
	wg.Wait()
	if err != nil {
		rep.Errorf("schedule: %v\n%v", err, sched)
		return nil
	}
	ops := h.Ops()
	for _, err := range applied.Check() {
		rep.Errorf("%v", err)
	}
	if err := testcluster.CheckFences(ops); err != nil {
		rep.Errorf("fences: %v", err)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer ccancel()
	li, err := c.WaitLeader(cctx)
	if err != nil {
		rep.Errorf("no leader after the schedule: %v", err)
		return ops
	}
	read, err := testcluster.ListReader(cctx, c.Node(li), "dur-")
	if err != nil {
		rep.Errorf("durability: list: %v", err)
		return ops
	}
	if err := testcluster.CheckDurable(cctx, ops, "dur-", read); err != nil {
		rep.Errorf("durability: %v", err)
	}
	if err := surf.Check(cctx, surfaceSlack); err != nil {
		rep.Errorf("surfaces: %v", err)
	}
	if err := c.CheckConverged(cctx); err != nil {
		rep.Errorf("convergence: %v", err)
	}
	if len(rep.problems) > 0 || t.Failed() {
		t.Logf("schedule:\n%v\nhistory: %s\nsurfaces: %s", sched, h.Summary(), surf.Summary())
	}
	return ops
}

// durableWriter takes keys it never gives back (every other one) so that
// the end can check that no acknowledged grant was lost.
func durableWriter(ctx context.Context, cl *testcluster.Client, i int, think time.Duration) {
	for j := 0; ctx.Err() == nil; j++ {
		key, owner := fmt.Sprintf("dur-%d-%d", i, j), testcluster.NewOwner()
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
		_, err := cl.TryAcquire(octx, key, owner, 10*time.Minute)
		if err == nil && j%2 == 0 {
			_, err = cl.Release(octx, key, owner)
		}
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			sleep(ctx, 100*time.Millisecond)
		}
		sleep(ctx, think)
	}
}

// sleep waits d of (virtual) time or until ctx ends: a client's back-off.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// checkHistory runs the checkers that need only the history.
func checkHistory(t *report, ops []testcluster.Op, timeout time.Duration) {
	err := testcluster.CheckLinearizable(ops, timeout)
	if errors.Is(err, testcluster.ErrCheckTimeout) {
		t.Logf("linearizability: %v; checking key by key", err)
		for _, kc := range testcluster.RecheckHistory(ops, 5*timeout) {
			if kc.Err != nil {
				t.Errorf("linearizability: key %q (%d ops, %d unknown) after %v: %v", kc.Key, kc.Ops, kc.Unknown, kc.Took, kc.Err)
			}
		}
	} else if err != nil {
		t.Errorf("linearizability: %v", err)
	}
}

// memDir is where the nodes' data directories go when it exists (tmpfs).
const memDir = "/dev/shm"

// useMemDir puts the test binary's temporary directories (so the nodes'
// data directories) in memory where the system has it, unless TMPDIR says
// otherwise: an fsync to a real disk costs milliseconds of wall time and
// nothing of simulated time, and what a crash loses is the simulated
// disk's business (testcluster.Options.SimulatedDisk), not the page
// cache's.
// Call it from TestMain, before any test runs.
func useMemDir() {
	if fi, err := os.Stat(memDir); err == nil && fi.IsDir() && os.Getenv("TMPDIR") == "" {
		_ = os.Setenv("TMPDIR", memDir)
	}
}

// Summary is the one line a run of many schedules ends with, for scripts.
func Summary(schedules int, simulated, wall time.Duration, failed int) string {
	x := 0.0
	if wall > 0 {
		x = simulated.Seconds() / wall.Seconds()
	}
	return fmt.Sprintf("sim: %d schedules, %.0f simulated s in %.0f wall s (%.1fx real time), %d failed",
		schedules, simulated.Seconds(), wall.Seconds(), x, failed)
}

// logLevel of the nodes: $LOCKNODE_TEST_LOG, else off (a schedule writes
// thousands of lines; replay a failing seed with LOCKNODE_TEST_LOG=warn).
func logLevel() string {
	if s := os.Getenv("LOCKNODE_TEST_LOG"); s != "" {
		return s
	}
	return "off"
}

// surfaceSlack is how long past its TTL a hold may still be seen held
// under the nemesis (testcluster's TestChaosSurfaces allows the same):
// one tick, an election after a kill or a pause, and the retry that
// reaches a follower back from a fault. A slow clock stretches it
// (testcluster.HoldEnd.Allowed); the watcher's own reads, which wait
// out a leaderless or quorumless spell, are not counted.
const surfaceSlack = 5 * time.Second

// stragglers is how long the end of a run waits for goroutines that end
// on their own (client.Client's background release: a one-second retry
// and a request of at most 5s, testcluster's HTTP client timeout).
const stragglers = 15 * time.Second

// report collects a run's violations: each fails t, or with expect is
// only logged and kept.
type report struct {
	t        *testing.T
	expect   bool
	problems []string
}

func (r *report) Errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.problems = append(r.problems, msg)
	if r.expect {
		r.t.Log(msg)
	} else {
		r.t.Error(msg)
	}
}

func (r *report) Logf(format string, args ...any) { r.t.Logf(format, args...) }
