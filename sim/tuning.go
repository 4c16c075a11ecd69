package sim

import (
	"os"
	"runtime"
	"runtime/debug"
	"time"

	gometrics "github.com/hashicorp/go-metrics/compat"

	"github.com/locknode/locknode/cluster"
)

// gcPercent is the GC target of a simulator process (GOGC overrides it).
// A schedule's heap is small (about 100 MiB at the default), and at the
// default target the collector took about a sixth of the CPU; at 400 a
// twentieth, for some 40 MiB more (bench/results/sim-*.md).
const gcPercent = 400

// tuneGC sets gcPercent unless $GOGC says otherwise. Call it from
// TestMain.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// tuneProcs runs this process on one P (GOMAXPROCS=1) unless $GOMAXPROCS
// says otherwise, and returns the Ps it had: the cores to run schedules
// on, one worker process each. A schedule is a few hundred goroutines
// that mostly hand work to one another; with more Ps than it keeps busy,
// every hand-off wakes an idle P that spins looking for work, and two
// workers side by side at two Ps each spent a quarter to a half more CPU for
// the same schedules than at one (bench/results/sim-*.md). Call it from
// TestMain.
func tuneProcs() (cores int) {
	cores = runtime.GOMAXPROCS(0)
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	return cores
}

// quietMetrics drops what raft reports through go-metrics' process-wide
// global (server.Start points it at a Prometheus sink): nothing in a
// schedule reads those metrics, and aggregating them under the sink's
// lock cost about 6% of the simulator's CPU. Every metric is filtered
// out before it reaches the sink; the code that reports them still runs.
// Call it after the cluster has started.
func quietMetrics() {
	// No service name: it would be put in front of every key, a copy of
	// the key per call, before the filter drops the metric.
	cfg := gometrics.DefaultConfig("")
	cfg.EnableHostname = false
	cfg.EnableRuntimeMetrics = false
	cfg.FilterDefault = false // block every metric not allowed; none is
	_, _ = gometrics.NewGlobal(cfg, &gometrics.BlackholeSink{})
}

// snapshotOften makes the nodes snapshot every 1,024 entries (checked
// every 3 s) and keep as many behind a snapshot, instead of 8,192 every
// 30 s and 10,240: a schedule of a minute applies some 7,000 entries, so
// at the defaults it never snapshots, and every restart reads the whole
// log back from the store (a tenth of the simulator's CPU). Snapshots,
// their restore at a restart and their install on a follower left
// behind then happen in every schedule, under the nemesis.
func snapshotOften(_ int, c *cluster.Config) {
	c.SnapshotThreshold = 1024
	c.SnapshotInterval = 3 * time.Second
	c.TrailingLogs = 1024
}
