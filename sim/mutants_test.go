//go:build locknode_mutants

package sim

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/fsm"
)

var (
	flagMutant         = flag.String("sim.mutant", "", "check only this planted bug")
	flagMutantSeeds    = flag.Int("sim.mutant.seeds", 0, "seeds per planted bug from sim.base (0: each bug's stated number); 1 replays one")
	flagMutantDuration = flag.Duration("sim.mutant.duration", 20*time.Second, "simulated length of each mutation-check schedule's faults")
)

// plantedBug is one bug the mutation check plants, and the number of
// seeds within which the simulator must find it.
type plantedBug struct {
	name   string
	set    func(string) // the package's SetMutant
	seeds  int
	origin string // what it stands for
}

// plantedBugs: one per checker, and the three safety bugs chaos found
// on the wall clock, brought back.
var plantedBugs = []plantedBug{
	{"fence-not-bumped", fsm.SetMutant, 5, "a grant keeps the highest fence instead of its own entry's index"},
	{"lease-early", fsm.SetMutant, 10, "a hold ends one tick (100ms) before its deadline"},
	{"release-any-owner", fsm.SetMutant, 10, "a release ends the key's hold whoever asks"},
	{"grant-newest-first", fsm.SetMutant, 10, "a freed key goes to its newest waiter, not its oldest"},
	{"permit-too-many", fsm.SetMutant, 10, "a semaphore grants one permit over its limit"},
	{"grant-dying-session", fsm.SetMutant, 30, "history: d559275 (a campaign won and lost in one entry: two leaders, one fence)"},
	{"anchor-largest-bound", cluster.SetMutant, 30, "history: 69fc964 (a fast follower's clock anchor ended leases early)"},
	{"anchor-max-age", cluster.SetMutant, 30, "history: 10fa033 (a slow leader's clock anchor ended leases early)"},
	{"lost-fsync", cluster.SetMutant, 10, "the raft log's appended entries are acknowledged without their fsync"},
}

// TestMutants plants each bug in turn and runs seeded schedules until a
// checker objects; it fails if a bug survives its seeds. It prints
// `mutants: K of M found` for scripts (make sim-mutants).
func TestMutants(t *testing.T) {
	found, total := 0, 0
	for _, m := range plantedBugs {
		if *flagMutant != "" && m.name != *flagMutant {
			continue
		}
		total++
		t.Run(m.name, func(t *testing.T) {
			m.set(m.name)
			defer m.set("")
			start := time.Now()
			if *flagMutantSeeds > 0 {
				m.seeds = *flagMutantSeeds
			}
			for i := range m.seeds {
				seed := *flagBase + uint64(i)
				var r Result
				t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
					r = Run(t, Config{Seed: seed, Duration: *flagMutantDuration, Think: *flagThink, Expect: true, CheckTimeout: 10 * time.Second})
				})
				if len(r.Problems) > 0 {
					found++
					fmt.Printf("mutant %s: found with seed %d (%d of %d seeds, %.0fs): %s\n", m.name, seed, i+1, m.seeds,
						time.Since(start).Seconds(), firstLine(r.Problems[0]))
					return
				}
			}
			fmt.Printf("mutant %s: SURVIVED %d seeds (%s)\n", m.name, m.seeds, m.origin)
			t.Errorf("planted bug %q (%s) survived %d seeds", m.name, m.origin, m.seeds)
		})
	}
	fmt.Printf("mutants: %d of %d found\n", found, total)
}

func firstLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}
