//go:debug randseednop=0

package sim

import (
	"flag"
	"fmt"
	"testing"
	"time"
)

var (
	flagSeed      = flag.Uint64("sim.seed", 0, "replay this one seed")
	flagSchedules = flag.Int("sim.schedules", 3, "schedules to run (seeds base..base+n-1)")
	flagBase      = flag.Uint64("sim.base", 1, "first seed")
	flagDuration  = flag.Duration("sim.duration", 10*time.Second, "simulated length of each schedule")
)

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
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := Run(t, Config{Seed: seed, Duration: *flagDuration})
			sim += r.Simulated
			wall += r.Wall
			if r.Failed {
				failed++
			}
			t.Logf("seed %d: %d ops, %.1f simulated s in %.2f wall s (check %.2f s)", seed, r.Ops, r.Simulated.Seconds(), r.Wall.Seconds(), r.Check.Seconds())
		})
	}
	t.Logf("sim: %d schedules, %.0f simulated s in %.1f wall s (%.1fx real time), %d failed",
		len(seeds), sim.Seconds(), wall.Seconds(), sim.Seconds()/wall.Seconds(), failed)
}
