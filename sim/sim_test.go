//go:debug randseednop=0

package sim

import (
	"flag"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

// The defaults are the slice `make test` runs under the race detector
// (15 schedules of 10 simulated s, about two minutes on two busy cores;
// bench/results/sim-*.md); `make sim` sets them.
var (
	flagSeed      = flag.Uint64("sim.seed", 0, "replay this one seed")
	flagSchedules = flag.Int("sim.schedules", 15, "schedules to run (seeds sim.base .. sim.base+n-1)")
	flagBase      = flag.Uint64("sim.base", 1, "first seed")
	flagNodes     = flag.Int("sim.nodes", 3, "nodes in the cluster")
	flagDuration  = flag.Duration("sim.duration", 10*time.Second, "simulated length of each schedule's faults")
)

func TestMain(m *testing.M) {
	useMemDir()
	os.Exit(m.Run())
}

// TestSim plays seeded schedules on a simulated 3-node cluster and checks
// each (see Run); it prints one summary line for scripts:
//
//	sim: N schedules, S simulated s in W wall s (X.Yx real time), F failed
func TestSim(t *testing.T) {
	seeds := []uint64{*flagSeed}
	if *flagSeed == 0 {
		seeds = seeds[:0]
		for i := range *flagSchedules {
			seeds = append(seeds, *flagBase+uint64(i))
		}
	}
	var sim, wall time.Duration
	failed := 0
	cpu0 := cpuTime()
	for _, seed := range seeds {
		// Counted from the subtest's outcome, not from Run's result: a
		// failure inside the bubble may end the subtest (FailNow) before
		// Run returns.
		if !t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := Run(t, Config{Seed: seed, Duration: *flagDuration, Nodes: *flagNodes})
			sim += r.Simulated
			wall += r.Wall
			t.Logf("seed %d: %d ops, %.1f simulated s in %.2f wall s (linearizability check %.2f s)", seed, r.Ops, r.Simulated.Seconds(), r.Wall.Seconds(), r.Check.Seconds())
		}) {
			failed++
			fmt.Printf("FAILED seed %d; replay: make sim SEED=%d SIM_DURATION=%v SIM_NODES=%d\n", seed, seed, *flagDuration, *flagNodes)
		}
	}
	if cpu := cpuTime() - cpu0; cpu > 0 {
		// Wall time follows the machine's load; CPU time is the cost.
		fmt.Printf("sim: %.0f CPU s (%.1f simulated s per CPU s)\n", cpu.Seconds(), sim.Seconds()/cpu.Seconds())
	}
	fmt.Println(Summary(len(seeds), sim, wall, failed))
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
