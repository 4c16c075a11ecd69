//go:debug randseednop=0

package sim

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// The defaults are the slice `make test` runs under the race detector:
// 50 schedules of 10 s, two at a time, with the workload's clients
// pausing up to 300 ms instead of make sim's 100 ms, which puts it within
// two minutes on two cores (bench/results/sim-*.md); `make sim` and
// `make sim-mutants` set them.
var (
	flagSeed      = flag.Uint64("sim.seed", 0, "replay this one seed")
	flagSchedules = flag.Int("sim.schedules", 50, "schedules to run (seeds sim.base .. sim.base+n-1)")
	flagBase      = flag.Uint64("sim.base", 1, "first seed")
	flagNodes     = flag.Int("sim.nodes", 3, "nodes in the cluster")
	flagDuration  = flag.Duration("sim.duration", 10*time.Second, "simulated length of each schedule's faults")
	flagThink     = flag.Duration("sim.think", 300*time.Millisecond, "longest pause of a workload client between two lock sessions (the work per simulated second; make sim: 100ms)")
	flagJobs      = flag.Int("sim.jobs", 0, "schedules run side by side, each in a process of its own (0: one per core, GOMAXPROCS at start; 1: one after another in this process)")
)

// cores is GOMAXPROCS as the process started, before tuneProcs: the
// default of sim.jobs.
var cores int

func TestMain(m *testing.M) {
	useMemDir()
	tuneGC()
	cores = tuneProcs()
	os.Exit(m.Run())
}

// TestSim plays seeded schedules on a simulated 3-node cluster and checks
// each (see Run); it prints one summary line for scripts:
//
//	sim: N schedules, S simulated s in W wall s (X.Yx real time), F failed
//
// where W is the wall time of the whole run and S the sum of the
// schedules' simulated time. With more than one seed and sim.jobs other
// than 1, the schedules run in worker processes (runPool).
func TestSim(t *testing.T) {
	seeds := []uint64{*flagSeed}
	if *flagSeed == 0 {
		seeds = seeds[:0]
		for i := range *flagSchedules {
			seeds = append(seeds, *flagBase+uint64(i))
		}
	}
	jobs := *flagJobs
	if jobs <= 0 {
		jobs = cores
	}
	wall0, cpu0 := time.Now(), cpuTime()
	var res []scheduleResult
	if len(seeds) > 1 && jobs > 1 {
		res = runPool(t, seeds, jobs)
	} else {
		for _, seed := range seeds {
			var r Result
			// Counted from the subtest's outcome, not from Run's result: a
			// failure inside the bubble may end the subtest (FailNow) before
			// Run returns.
			ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				r = Run(t, Config{Seed: seed, Duration: *flagDuration, Nodes: *flagNodes, Think: *flagThink,
					Replay: fmt.Sprintf("go test -count=1 -run '^TestSim$' ./sim/ -sim.seed=%%d -sim.duration=%v -sim.nodes=%d -sim.think=%v", *flagDuration, *flagNodes, *flagThink)})
				t.Logf("seed %d: %d ops, %.1f simulated s in %.2f wall s (linearizability check %.2f s)", seed, r.Ops, r.Simulated.Seconds(), r.Wall.Seconds(), r.Check.Seconds())
			})
			sr := scheduleResult{Seed: seed, Ops: r.Ops, Simulated: r.Simulated, Wall: r.Wall, Failed: !ok}
			// The pool's workers report with this line.
			fmt.Println(sr)
			res = append(res, sr)
		}
	}
	var sim time.Duration
	failed := 0
	for _, r := range res {
		sim += r.Simulated
		if r.Failed {
			failed++
			fmt.Printf("FAILED seed %d; replay: make sim SEED=%d SIM_DURATION=%v SIM_NODES=%d SIM_THINK=%v\n", r.Seed, r.Seed, *flagDuration, *flagNodes, *flagThink)
		}
	}
	if cpu := cpuTime() - cpu0; cpu > 0 {
		// Wall time follows the machine's load; CPU time (this process's
		// and its workers') is the cost.
		fmt.Printf("sim: %.0f CPU s (%.1f simulated s per CPU s)\n", cpu.Seconds(), sim.Seconds()/cpu.Seconds())
	}
	fmt.Println(Summary(len(seeds), sim, time.Since(wall0), failed))
}

// cpuTime is the user and system CPU time of this process and of its
// children that have ended.
func cpuTime() time.Duration {
	var sum time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err != nil {
			return 0
		}
		sum += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return sum
}

// TestOneProcessor: a schedule runs on one P unless $GOMAXPROCS asks for
// more, and sim.jobs still defaults to the cores the process started with.
func TestOneProcessor(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set: tuneProcs leaves it")
	}
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS = %d, want 1", got)
	}
	if cores < 1 || cores > runtime.NumCPU() {
		t.Errorf("cores = %d, want 1..%d", cores, runtime.NumCPU())
	}
}
