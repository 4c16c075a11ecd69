// Package sim runs a whole locknode cluster on virtual time: real nodes
// (the same cluster, fsm, raft, HTTP and RESP code as production) in one
// testing/synctest bubble, connected by an in-memory network, under a
// seeded fault schedule and workload, with testcluster's checkers run on
// the history afterwards. A schedule of simulated seconds takes a
// fraction of that in wall time, so many more schedules run than on the
// wall clock, and a failing one prints its seed and a command that
// replays it.
//
// Use it from a test:
//
//	func TestMine(t *testing.T) {
//		r := sim.Run(t, sim.Config{Seed: 42, Duration: 20 * time.Second})
//		t.Logf("%d ops in %v simulated", r.Ops, r.Simulated)
//	}
//
// The test binary must carry the directive `//go:debug randseednop=0`
// (in any of its _test.go files, before the package clause) so that Run
// can seed math/rand's global source, from which raft draws its election
// timeouts; without it those timeouts differ between replays.
//
// What a bubble needs, and why the pieces look as they do:
//   - every wait must be durably blocking (a channel, a timer, a
//     sync.Cond), so the network is made of channels (Network), never a
//     socket; a mutex or a file syscall does not stall the clock for long
//     because it returns on its own;
//   - every goroutine started in the bubble must end before it does, so
//     the cluster, clients and servers are all closed by t.Cleanup;
//   - goroutine scheduling is still Go's: a replay draws the same
//     schedule, workload and timeouts, but the interleaving (and so the
//     history) can differ. docs/simulation.md says how often a replay
//     reproduces a failure.
package sim
