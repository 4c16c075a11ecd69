package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// serve's --gomaxprocs: how many OS threads run Go code at once.
//
// Why auto means 1 on a host where Go would use 2: a node's work is a
// chain of short steps handed between goroutines (connection reader,
// raft's loops, the log writer, the FSM, the reply), each ending in a
// syscall (socket write, fsync). With a second P, every hand-off to an
// idle P wakes a parked thread (futex) and the runtime's monitor thread
// keeps polling every 20 us to take Ps back from threads blocked in
// fsync: context switches that cost more than the parallelism gains when
// the node shares 2 CPUs with other work. Measured with lockbench on the
// shared 2-core machine (3 nodes and the client on 2 cores, alternating
// runs, medians; load 4-9 from other work):
//   - before the raft fork (main 3754f8f): uncontended 64 workers, node
//     CPU per cycle 174-190 us -> 145-150 us, 4517 -> 5208 and 4391 ->
//     4736 cycles/s (4 and 3 rounds); per node and 5 s, follower
//     context switches 45k -> 26k and CPU 1.39 -> 0.91 s, leader 61k ->
//     45k and 3.16 -> 2.51 s; entries per leader fsync 18 -> 24;
//   - with the raft fork (main a63b82e), auto against --gomaxprocs 0:
//     64 workers node CPU per cycle 147 -> 131 us (5 of 5 pairs), 6480
//     -> 6550 cycles/s (4 of 5 pairs faster); 1 worker acquire p50 0.665
//     -> 0.670 ms; contended 1201 -> 1254 acquisitions/s, wait p99 20.6
//     -> 17.6 ms (4 pairs each); 16 workers 2820 -> 2766 cycles/s (10
//     pairs, 6 faster), node CPU per cycle 355 -> 312 us, but acquire
//     p99 7.0 -> 9.9 ms: with one P a thread blocked in fsync holds it
//     until the monitor takes it back (20-70 us), and replies wait.
//
// A node alone on a 2-CPU host at saturation is the case this can cost:
// its Go code then gets one CPU. --gomaxprocs 2 (or 0: Go's own choice)
// restores Go's default there. On larger hosts auto keeps Go's default
// (not measured here).
const autoProcsBelow = 3 // auto sets 1 P when Go's default is below this

const gomaxprocsUsage = "Go Ps (threads running Go code at once): auto (1 when Go would use 2 CPUs, else Go's default), " +
	"a number, or 0 (Go's default: the CPUs available); default auto. GOMAXPROCS, if set, wins"

// gomaxprocsPlan is what gomaxprocsPlan.apply will do.
type gomaxprocsPlan struct {
	procs   int  // 0: leave the runtime's setting alone
	auto    bool // procs came from the auto rule
	fromEnv bool // GOMAXPROCS is set: leave the runtime's setting alone
	flagSet bool
}

// planGOMAXPROCS decides the number of Ps from the flag value (may be
// empty), GOMAXPROCS (the runtime already applied it; it wins) and the
// runtime's current setting (Go's default: CPUs in the affinity mask
// and the cgroup CPU limit). A malformed flag is an error even when
// GOMAXPROCS wins.
func planGOMAXPROCS(flagVal, env string, current int) (gomaxprocsPlan, error) {
	var p gomaxprocsPlan
	switch s := strings.TrimSpace(flagVal); s {
	case "", "auto":
		p.flagSet = s != ""
		if current < autoProcsBelow && current > 1 {
			p.procs, p.auto = 1, true
		}
	default:
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 || v > 4096 {
			return gomaxprocsPlan{}, fmt.Errorf("gomaxprocs %q: want auto or a whole number from 0 to 4096", s)
		}
		p = gomaxprocsPlan{procs: v, flagSet: true}
	}
	if env != "" {
		p = gomaxprocsPlan{fromEnv: true, flagSet: p.flagSet}
	}
	return p, nil
}

// gomaxprocs plans the number of Ps from the flag and GOMAXPROCS.
func gomaxprocs(flagVal string) (gomaxprocsPlan, error) {
	return planGOMAXPROCS(flagVal, os.Getenv("GOMAXPROCS"), runtime.GOMAXPROCS(0))
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
		src := "flag"
		if p.auto {
			src = "auto"
		}
		log.Info("gomaxprocs", "procs", p.procs, "source", src, "cpus", runtime.NumCPU())
	}
}
