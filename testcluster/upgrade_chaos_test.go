//go:build locknode_next

package testcluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/fsm"
)

// TestUpgradeChaos activates the synthetic next version (build tag
// locknode_next: every node runs 1..fsm.MaxClusterVersion, activation is
// manual) under load and the nemesis: the leader crashes with the
// activation entry in flight, then the activation is retried through
// crashes, partitions, message loss and leader kills until every node
// runs the next release's version. The history stays linearizable with
// increasing fences, no acknowledged hold is lost, and the replicas
// converge (byte-identical format-6 snapshots). `make upgrade-test` runs
// it.
func TestUpgradeChaos(t *testing.T) {
	seed := uint64(28)
	opts := Options{Seed: seed, Config: func(_ int, c *cluster.Config) { c.ManualUpgrade = true }}
	c := New(t, 3, opts)
	h := NewHistory()
	w := &Workload{Keys: Keys("k", 3), Seed: seed}
	w.Clients = []*Client{c.NativeClient(h, 0, 0), c.NativeClient(h, 1, 1), c.HTTPClient(h, 2), c.RESPClient(h, 3, 2, false)}
	dur := c.NativeClient(h, 4, 1)
	for _, cl := range append(w.Clients, dur) {
		defer cl.Close()
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // ends when stop is called
		defer wg.Done()
		w.Run(ctx)
	}()
	go func() { // ends when stop is called
		defer wg.Done()
		for j := 0; ctx.Err() == nil; j++ {
			octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
			_, err := dur.TryAcquire(octx, fmt.Sprintf("dur-%d", j), NewOwner(), 10*time.Minute)
			cancel()
			if unknown(err) {
				pause(ctx, 100*time.Millisecond)
			}
		}
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer wcancel()
	waitOps := func(more int) {
		t.Helper()
		n := len(h.Ops()) + more
		if _, err := waitFor(wctx, 10*time.Millisecond, func() (int, bool) { return 0, len(h.Ops()) >= n }); err != nil {
			t.Fatal(err)
		}
	}
	waitOps(30)
	for i := range 3 {
		if v := c.Node(i).ClusterVersion(); v != 1 {
			t.Fatalf("%s at version %d before activation (manual)", nodeID(i), v)
		}
	}

	// The leader is killed while it activates: the entry may be in
	// flight, committed or lost; either way every node ends up deciding
	// alike.
	l, err := c.WaitLeader(wctx)
	if err != nil {
		t.Fatal(err)
	}
	// The activation entry itself, proposed on the leader as Upgrade
	// would after asking the members (all run 1..fsm.MaxClusterVersion
	// here), and the leader crashed at once.
	f := c.Node(l)
	done := make(chan error, 1)
	go func() { // ends when Apply returns, within its context
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := f.Apply(uctx, &fsm.Command{Op: fsm.OpSetVersion, Token: fsm.MaxClusterVersion})
		if err == nil {
			err = r.Err
		}
		done <- err
	}()
	c.Crash(l)
	t.Logf("activation entry proposed as the leader crashed: %v", <-done)
	c.Restart(l)
	waitOps(20)

	// The nemesis, while activation is retried until it holds.
	activated := make(chan struct{})
	var awg sync.WaitGroup
	awg.Add(1)
	go func() { // ends once every node runs the next version, or wctx ends
		defer awg.Done()
		for wctx.Err() == nil {
			all := true
			var up *cluster.Node
			for i := range 3 {
				n := c.Node(i)
				if n == nil {
					all = false
					continue
				}
				up = n
				all = all && n.ClusterVersion() == fsm.MaxClusterVersion
			}
			if all {
				close(activated)
				return
			}
			if up != nil {
				uctx, cancel := context.WithTimeout(wctx, 2*time.Second)
				_, _ = up.Upgrade(uctx)
				cancel()
			}
			pause(wctx, 100*time.Millisecond)
		}
	}()
	sched := NewSchedule(seed, 3, 4*time.Second, FaultKillLeader, FaultCrash, FaultPartition, FaultLoss)
	t.Logf("nemesis: %v", sched)
	nctx, ncancel := context.WithTimeout(context.Background(), 40*time.Second)
	err = RunSchedule(nctx, c, sched)
	ncancel()
	if err != nil {
		t.Fatal(err)
	}
	c.Recover()
	select {
	case <-activated:
	case <-wctx.Done():
		t.Fatal("the next version not active on every node")
	}
	awg.Wait()
	waitOps(20)
	stop()
	wg.Wait()

	// The new op works on every node's table.
	r, err := c.Node(0).Apply(wctx, &fsm.Command{Op: fsm.OpNote, Key: "a", Owner: "x"})
	if err != nil || r.Err != nil {
		t.Fatalf("OpNote after activation: %v %v", err, r.Err)
	}

	ops := h.Ops()
	t.Logf("history: %d ops: %s", len(ops), h.Summary())
	if err := CheckLinearizable(ops, time.Minute); err != nil {
		t.Errorf("linearizability: %v", err)
	}
	if err := CheckFences(ops); err != nil {
		t.Errorf("fences: %v", err)
	}
	read, err := ListReader(wctx, c.Leader(), "dur-")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckDurable(wctx, ops, "dur-", read); err != nil {
		t.Errorf("durability: %v", err)
	}
	if err := c.CheckConverged(wctx); err != nil {
		t.Errorf("convergence: %v", err)
	}
}
