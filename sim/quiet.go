package sim

import (
	"os"
	"runtime/debug"

	gometrics "github.com/hashicorp/go-metrics/compat"
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

// quietMetrics drops what raft reports through go-metrics' process-wide
// global (server.Start points it at a Prometheus sink): nothing in a
// schedule reads those metrics, and aggregating them under the sink's
// lock cost about 6% of the simulator's CPU. Every metric is filtered
// out before it reaches the sink; the code that reports them still runs.
// Call it after the cluster has started.
func quietMetrics() {
	cfg := gometrics.DefaultConfig("locknode")
	cfg.EnableHostname = false
	cfg.EnableRuntimeMetrics = false
	cfg.FilterDefault = false // block every metric not allowed; none is
	_, _ = gometrics.NewGlobal(cfg, &gometrics.BlackholeSink{})
}
