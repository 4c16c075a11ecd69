package proctune

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
// Not the default: at 64 workers the gain is CPU, hardly throughput,
// and peak memory and the 16-worker tail latency are worse
// (bench/results/tuning.md#gomaxprocs).

// GOMAXPROCSPlan is what GOMAXPROCSPlan.Apply will do.
type GOMAXPROCSPlan struct {
	procs   int  // 0: leave the runtime's setting alone
	fromEnv bool // GOMAXPROCS is set: leave the runtime's setting alone
	flagSet bool
}

// planGOMAXPROCS decides the number of Ps from the flag value (may be
// empty) and GOMAXPROCS (the runtime already applied a positive one; it
// wins). A
// malformed flag is an error even when GOMAXPROCS wins.
func planGOMAXPROCS(flagVal, env string) (GOMAXPROCSPlan, error) {
	var p GOMAXPROCSPlan
	if s := strings.TrimSpace(flagVal); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 || v > 4096 {
			return GOMAXPROCSPlan{}, fmt.Errorf("GOMAXPROCS %q: want a whole number from 0 to 4096", s)
		}
		p = GOMAXPROCSPlan{procs: v, flagSet: true}
	}
	// The runtime takes GOMAXPROCS only when it is a positive number
	// (it ignores 0, "auto" and the like), and so does this.
	if v, err := strconv.Atoi(env); err == nil && v > 0 {
		p = GOMAXPROCSPlan{fromEnv: true, flagSet: p.flagSet}
	}
	return p, nil
}

// GOMAXPROCS plans the number of Ps from the flag and GOMAXPROCS.
func GOMAXPROCS(flagVal string) (GOMAXPROCSPlan, error) {
	return planGOMAXPROCS(flagVal, os.Getenv("GOMAXPROCS"))
}

// Apply sets the planned number of Ps and logs it.
func (p GOMAXPROCSPlan) Apply(log hclog.Logger) {
	switch {
	case p.fromEnv:
		if p.flagSet {
			log.Warn("GOMAXPROCS is set and wins over --GOMAXPROCS", "GOMAXPROCS", os.Getenv("GOMAXPROCS"))
		}
		log.Info("GOMAXPROCS", "procs", runtime.GOMAXPROCS(0), "source", "GOMAXPROCS")
	case p.procs == 0:
		log.Info("GOMAXPROCS", "procs", runtime.GOMAXPROCS(0), "source", "go")
	default:
		runtime.GOMAXPROCS(p.procs)
		log.Info("GOMAXPROCS", "procs", p.procs, "source", "flag", "cpus", runtime.NumCPU())
	}
}
