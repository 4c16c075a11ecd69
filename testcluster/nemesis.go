package testcluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"time"

	"github.com/locknode/locknode/cluster"
)

// FaultKind is one kind of nemesis step.
type FaultKind string

// Nemesis faults. Each is applied, held, then undone.
const (
	FaultPartition  FaultKind = "partition"   // a random minority is split off
	FaultIsolate    FaultKind = "isolate"     // one node is cut off
	FaultCrash      FaultKind = "crash"       // one node crashes, then restarts
	FaultKillLeader FaultKind = "kill-leader" // whichever node leads crashes, then restarts
	FaultPause      FaultKind = "pause"       // one node is stopped, then resumed
	FaultSkew       FaultKind = "skew"        // one non-leader's clock is skewed (kept)
	FaultLoss       FaultKind = "loss"        // message drop/delay/duplication everywhere
	FaultClockJump  FaultKind = "clock-jump"  // one node's wall clock steps by 1s to a day, then back; its monotonic clock does not

	// Disk faults, on one node's raft log (Cluster.FailDisk, TearDisk).
	FaultDiskFull  FaultKind = "disk-full"  // every write, fsync and segment creation fails with ENOSPC
	FaultDiskError FaultKind = "disk-eio"   // writes, or fsyncs, fail with EIO
	FaultTornCrash FaultKind = "torn-crash" // the next write is torn, the node crashes, then restarts
)

var allFaults = []FaultKind{FaultPartition, FaultIsolate, FaultCrash, FaultKillLeader, FaultPause, FaultSkew, FaultLoss}

// diskFaults are drawn from a stream of their own and interleaved with
// the others (about one step in four), so a seed's other steps are the
// ones it drew before disk faults existed.
var diskFaults = []FaultKind{FaultDiskFull, FaultDiskError, FaultTornCrash}

// jumpOffsets are the sizes of a wall-clock step: a leap second's
// neighbour, an NTP correction, a time zone mistake, a day.
var jumpOffsets = []time.Duration{time.Second, 7 * time.Second, time.Minute, time.Hour, 24 * time.Hour}

func isDiskFault(k FaultKind) bool {
	return k == FaultDiskFull || k == FaultDiskError || k == FaultTornCrash
}

// Step is one fault of a Schedule.
type Step struct {
	Kind   FaultKind
	Nodes  []int             // targets (partition: the minority side)
	Hold   time.Duration     // how long the fault lasts
	Gap    time.Duration     // quiet time after it is undone
	Offset time.Duration     // skew
	Rate   float64           // skew
	Faults Faults            // loss
	DiskOp cluster.StorageOp // disk-eio: the operation that fails
}

func (s Step) String() string {
	switch s.Kind {
	case FaultSkew:
		return fmt.Sprintf("skew %v offset=%v rate=%.2f", s.Nodes, s.Offset, s.Rate)
	case FaultLoss:
		return fmt.Sprintf("loss drop=%.2f delay=%.2f dup=%.2f for %v", s.Faults.Drop, s.Faults.Delay, s.Faults.Duplicate, s.Hold)
	case FaultKillLeader:
		return fmt.Sprintf("kill-leader for %v", s.Hold)
	case FaultClockJump:
		return fmt.Sprintf("clock-jump %v by %v for %v", s.Nodes, s.Offset, s.Hold)
	case FaultDiskError:
		return fmt.Sprintf("%s %v on %s for %v", s.Kind, s.Nodes, s.DiskOp, s.Hold)
	}
	return fmt.Sprintf("%s %v for %v", s.Kind, s.Nodes, s.Hold)
}

// Schedule is a reproducible sequence of faults: NewSchedule with the
// same seed, node count and duration gives the same steps.
type Schedule struct {
	Seed  uint64
	Steps []Step
}

func (s Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schedule seed=%d (%d steps):", s.Seed, len(s.Steps))
	for _, st := range s.Steps {
		b.WriteString("\n  " + st.String())
	}
	return b.String()
}

// NewSchedule draws faults for a cluster of n nodes until their total
// time reaches duration. kinds limits the faults drawn (default: all,
// the disk faults among them; clock jumps only when named).
func NewSchedule(seed uint64, n int, duration time.Duration, kinds ...FaultKind) Schedule {
	var base, disk []FaultKind
	jumps := false
	if len(kinds) == 0 {
		base, disk = allFaults, diskFaults
	}
	for _, k := range kinds {
		switch {
		case isDiskFault(k):
			disk = append(disk, k)
		case k == FaultClockJump:
			jumps = true
		default:
			base = append(base, k)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x6e656d65736973))
	drng := rand.New(rand.NewPCG(seed, 0x6469736b))
	// Clock jumps come from a stream of their own too (about one step in
	// six), so adding them leaves a seed's other steps as they were.
	jrng := rand.New(rand.NewPCG(seed, 0x6a756d70))
	s := Schedule{Seed: seed}
	var total time.Duration
	for total < duration {
		if len(base) > 0 {
			st := drawStep(rng, n, base)
			s.Steps = append(s.Steps, st)
			total += st.Hold + st.Gap
		}
		if len(disk) > 0 && (len(base) == 0 || drng.IntN(4) == 0) {
			st := drawDiskStep(drng, n, disk)
			s.Steps = append(s.Steps, st)
			total += st.Hold + st.Gap
		}
		if jumps && (len(base)+len(disk) == 0 || jrng.IntN(6) == 0) {
			st := Step{Kind: FaultClockJump, Nodes: []int{jrng.IntN(n)},
				Offset: time.Duration(jrng.IntN(2)*2-1) * jumpOffsets[jrng.IntN(len(jumpOffsets))],
				Hold:   time.Duration(150+jrng.IntN(1200)) * time.Millisecond,
				Gap:    time.Duration(50+jrng.IntN(400)) * time.Millisecond}
			s.Steps = append(s.Steps, st)
			total += st.Hold + st.Gap
		}
	}
	return s
}

// drawStep draws one fault of kinds (none a disk fault).
func drawStep(rng *rand.Rand, n int, kinds []FaultKind) Step {
	st := Step{
		Kind: kinds[rng.IntN(len(kinds))],
		Hold: time.Duration(150+rng.IntN(1200)) * time.Millisecond,
		Gap:  time.Duration(50+rng.IntN(400)) * time.Millisecond,
	}
	switch st.Kind {
	case FaultPartition:
		minority := rng.Perm(n)[:max(1, (n-1)/2)]
		st.Nodes = minority
	case FaultIsolate, FaultCrash, FaultPause:
		st.Nodes = []int{rng.IntN(n)}
	case FaultSkew:
		st.Nodes = []int{rng.IntN(n)}
		st.Offset = time.Duration(rng.IntN(2)*2-1) * time.Hour
		// Slow or slightly fast: within the clients' drift margin
		// (TTL/10), as the design requires of real clocks.
		st.Rate = []float64{0.5, 0.9, 1.0, 1.02}[rng.IntN(4)]
		st.Hold = 0
	case FaultLoss:
		st.Faults = Faults{
			Drop:      []float64{0.01, 0.05, 0.1}[rng.IntN(3)],
			Delay:     0.3,
			MaxDelay:  time.Duration(5+rng.IntN(30)) * time.Millisecond,
			Duplicate: []float64{0.02, 0.1}[rng.IntN(2)],
		}
	}
	return st
}

// drawDiskStep draws one disk fault of kinds.
func drawDiskStep(rng *rand.Rand, n int, kinds []FaultKind) Step {
	st := Step{
		Kind:  kinds[rng.IntN(len(kinds))],
		Nodes: []int{rng.IntN(n)},
		Hold:  time.Duration(150+rng.IntN(1200)) * time.Millisecond,
		Gap:   time.Duration(50+rng.IntN(400)) * time.Millisecond,
	}
	if st.Kind == FaultDiskError {
		st.DiskOp = []cluster.StorageOp{cluster.StorageWrite, cluster.StorageSync}[rng.IntN(2)]
	}
	return st
}

// RunSchedule plays s against c, logging each step, and leaves the
// cluster healed, resumed, restarted and fault-free (clock skews stay).
// It stops early when ctx ends. Call it from a goroutine other than the
// test's only if the cluster's nodes always restart (errors are
// returned, not fatal).
func RunSchedule(ctx context.Context, c *Cluster, s Schedule) error {
	c.log.Info("nemesis", "seed", s.Seed, "steps", len(s.Steps))
	defer c.Recover()
	for i, st := range s.Steps {
		if ctx.Err() != nil {
			return nil
		}
		c.log.Info("nemesis step", "n", i, "step", st.String())
		undo, err := c.apply(st)
		if err != nil {
			return fmt.Errorf("nemesis step %d (%s): %w", i, st, err)
		}
		if !sleepCtx(ctx, st.Hold) {
			undo()
			return nil
		}
		undo()
		if err := c.recoverErr(); err != nil {
			return fmt.Errorf("nemesis step %d (%s): recover: %w", i, st, err)
		}
		sleepCtx(ctx, st.Gap)
	}
	return nil
}

// sleepCtx waits d (fault hold times are the schedule itself, not
// synchronisation); false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// apply starts one fault and returns how to undo it.
func (c *Cluster) apply(st Step) (undo func(), err error) {
	none := func() {}
	switch st.Kind {
	case FaultPartition:
		in := map[int]bool{}
		for _, i := range st.Nodes {
			in[i] = true
		}
		var a, b []int
		for i := range c.N() {
			if in[i] {
				a = append(a, i)
			} else {
				b = append(b, i)
			}
		}
		c.Partition(a, b)
		return c.Heal, nil
	case FaultIsolate:
		c.Isolate(st.Nodes[0])
		return c.Heal, nil
	case FaultCrash, FaultKillLeader:
		i := st.Nodes
		if st.Kind == FaultKillLeader {
			l := c.LeaderIndex()
			if l < 0 {
				return none, nil
			}
			i = []int{l}
		}
		c.Crash(i[0])
		return func() {}, nil // recoverErr restarts it
	case FaultPause:
		c.Pause(st.Nodes[0])
		return func() { c.Resume(st.Nodes[0]) }, nil
	case FaultSkew:
		i := st.Nodes[0]
		if i == c.LeaderIndex() {
			// A leader's clock must not jump; skew the next node instead.
			i = (i + 1) % c.N()
		}
		c.SkewClock(i, st.Offset, st.Rate)
		return none, nil
	case FaultLoss:
		c.SetFaults(st.Faults)
		return func() { c.SetFaults(Faults{}) }, nil
	case FaultClockJump:
		// Any node, the leader too: only its wall clock steps, which
		// the time rule never reads after a cluster's first term. Undone
		// by the opposite step, as NTP corrects a stepped clock.
		i := st.Nodes[0]
		if err := jumpWallClock(c, i, st.Offset); err != nil {
			return none, err
		}
		return func() { _ = jumpWallClock(c, i, -st.Offset) }, nil
	case FaultDiskFull:
		c.FailDisk(st.Nodes[0], syscall.ENOSPC)
		return func() { c.HealDisk(st.Nodes[0]) }, nil
	case FaultDiskError:
		c.FailDisk(st.Nodes[0], syscall.EIO, st.DiskOp)
		return func() { c.HealDisk(st.Nodes[0]) }, nil
	case FaultTornCrash:
		// The node writes constantly under load, so the tear comes
		// within the hold; the crash at its end makes it the last write
		// (recoverErr restarts the node on a healed disk).
		c.TearDisk(st.Nodes[0])
		return func() {
			c.Crash(st.Nodes[0])
			c.HealDisk(st.Nodes[0])
		}, nil
	}
	return none, fmt.Errorf("unknown fault %q", st.Kind)
}

// Recover heals partitions, clears message and disk faults, resumes paused nodes
// and restarts crashed ones (clock skews stay). Failures to restart are
// logged; use recoverErr to see them.
func (c *Cluster) Recover() {
	if err := c.recoverErr(); err != nil {
		c.log.Error("recover", "error", err)
	}
}

func (c *Cluster) recoverErr() error {
	c.Heal()
	c.SetFaults(Faults{})
	for i := range c.N() {
		c.HealDisk(i)
		if c.Paused(i) {
			c.Resume(i)
		}
		if !c.Up(i) {
			if err := c.RestartErr(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// jumpWallClock steps node i's wall clock by d (forwards or back); its
// monotonic clock runs on untouched, as a system clock's does when NTP or
// an operator steps the time. It persists across restarts.
func jumpWallClock(c *Cluster, i int, d time.Duration) error {
	c.log.Info("wall clock jump", "node", nodeID(i), "by", d)
	return c.clocks[i].jumpWall(d)
}
