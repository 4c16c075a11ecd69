package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// serve's --gomaxprocs: how many OS threads run Go code at once. The
// default, 0, keeps Go's own choice (the CPUs in the affinity mask and
// the cgroup CPU limit); 1 is worth it where several nodes share few
// CPUs, and costs memory and tail latency elsewhere.
//
// Why it helps there: a node's work is a chain of short steps handed
// between goroutines (connection reader, raft's loops, the log writer,
// the FSM, the reply), each ending in a syscall (socket write, fsync).
// With a second P, every hand-off to an idle P wakes a parked thread
// (futex) and the runtime's monitor thread polls every 20 us to take Ps
// back from threads blocked in fsync: context switches that cost more
// than the parallelism gives when 3 nodes and a client share 2 CPUs.
// Measured with lockbench on the shared 2-core machine (alternating
// runs, medians; load 4-9 from other work), 1 against Go's 2:
//   - before the raft fork (main 3754f8f): uncontended 64 workers, node
//     CPU per cycle 174-190 us -> 145-150 us, 4517 -> 5208 and 4391 ->
//     4736 cycles/s (4 and 3 rounds); per node and 5 s, follower
//     context switches 45k -> 26k and CPU 1.39 -> 0.91 s, leader 61k ->
//     45k and 3.16 -> 2.51 s; entries per leader fsync 18 -> 24;
//   - with the raft fork (main a63b82e): 64 workers node CPU per cycle
//     147 -> 131 us (5 of 5 pairs), 6480 -> 6550 cycles/s; 1 worker
//     acquire p50 0.665 -> 0.670 ms; contended 1201 -> 1254
//     acquisitions/s, wait p99 20.6 -> 17.6 ms (4 pairs each);
//   - but 16 workers: 2820 -> 2766 cycles/s (10 pairs) with acquire p99
//     7.0 -> 9.9 ms (a thread blocked in fsync holds the one P until the
//     monitor takes it back, 20-70 us, and replies wait); and filling 1M
//     locks peaked at 457-484 MB RSS per node against 347-361 MB (2
//     runs each; not analysed further: likely the collector, marking on
//     a quarter of one CPU, falls behind the fill).
//
// Hence not the default: the gain at 64 workers is CPU, hardly
// throughput, once the leader replicates while it writes, and the peak
// memory and 16-worker tail are worse.

const gomaxprocsUsage = "Go Ps (threads running Go code at once): a number, or 0 for Go's default (the CPUs available); " +
	"1 cuts CPU per request where several nodes share 2 CPUs. GOMAXPROCS, if set, wins"

// gomaxprocsPlan is what gomaxprocsPlan.apply will do.
type gomaxprocsPlan struct {
	procs   int  // 0: leave the runtime's setting alone
	fromEnv bool // GOMAXPROCS is set: leave the runtime's setting alone
	flagSet bool
}

// planGOMAXPROCS decides the number of Ps from the flag value (may be
// empty) and GOMAXPROCS (the runtime already applied a positive one; it
// wins). A
// malformed flag is an error even when GOMAXPROCS wins.
func planGOMAXPROCS(flagVal, env string) (gomaxprocsPlan, error) {
	var p gomaxprocsPlan
	if s := strings.TrimSpace(flagVal); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 || v > 4096 {
			return gomaxprocsPlan{}, fmt.Errorf("gomaxprocs %q: want a whole number from 0 to 4096", s)
		}
		p = gomaxprocsPlan{procs: v, flagSet: true}
	}
	// The runtime takes GOMAXPROCS only when it is a positive number
	// (it ignores 0, "auto" and the like), and so does this.
	if v, err := strconv.Atoi(env); err == nil && v > 0 {
		p = gomaxprocsPlan{fromEnv: true, flagSet: p.flagSet}
	}
	return p, nil
}

// gomaxprocs plans the number of Ps from the flag and GOMAXPROCS.
func gomaxprocs(flagVal string) (gomaxprocsPlan, error) {
	return planGOMAXPROCS(flagVal, os.Getenv("GOMAXPROCS"))
}

// apply sets the planned number of Ps and logs it.
func (p gomaxprocsPlan) apply(log hclog.Logger) {
	switch {
	case p.fromEnv:
		if p.flagSet {
			log.Warn("GOMAXPROCS is set and wins over --gomaxprocs", "GOMAXPROCS", os.Getenv("GOMAXPROCS"))
		}
		log.Info("gomaxprocs", "procs", runtime.GOMAXPROCS(0), "source", "GOMAXPROCS")
	case p.procs == 0:
		log.Info("gomaxprocs", "procs", runtime.GOMAXPROCS(0), "source", "go")
	default:
		runtime.GOMAXPROCS(p.procs)
		log.Info("gomaxprocs", "procs", p.procs, "source", "flag", "cpus", runtime.NumCPU())
	}
}
