package testcluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Real processes: kill -9 the leader, restart it, SIGSTOP a node past
// the leases and SIGCONT it, under a workload through the HTTP client
// and RESP; the same checkers judge the history.
func TestProcCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs locknode processes")
	}
	bin := BuildLocknode(t)
	p := NewProcCluster(t, bin, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	l, err := p.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h := NewHistory()
	w := &Workload{Keys: Keys("k", 2), Seed: 11}
	w.Clients = []*Client{p.HTTPClient(h, 0), p.HTTPClient(h, 1), NewRESPClient(h, 2, p.RESPAddr((l+1)%3), false)}
	dur := p.HTTPClient(h, 3)
	defer w.Clients[2].Close()

	wctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // ends when stop is called
		defer wg.Done()
		w.Run(wctx)
	}()
	go func() { // ends when stop is called
		defer wg.Done()
		for j := 0; wctx.Err() == nil; j++ {
			key, owner := fmt.Sprintf("dur-%d", j), NewOwner()
			octx, ocancel := context.WithTimeout(context.WithoutCancel(wctx), 3*time.Second)
			_, err := dur.TryAcquire(octx, key, owner, 10*time.Minute)
			if err == nil && j%2 == 0 {
				_, err = dur.Release(octx, key, owner)
			}
			ocancel()
			if unknown(err) {
				pause(wctx, 100*time.Millisecond)
			}
		}
	}()
	waitOps := func(more int) {
		t.Helper()
		n := len(h.Ops()) + more
		if _, err := waitFor(ctx, 10*time.Millisecond, func() (int, bool) { return 0, len(h.Ops()) >= n }); err != nil {
			t.Fatal(err)
		}
	}
	waitOps(40)
	t.Logf("kill -9 leader %s", nodeID(l))
	p.Kill(l)
	waitOps(40)
	p.Restart(l)
	waitOps(20)
	l2, err := p.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGSTOP leader %s past the leases", nodeID(l2))
	p.Stop(l2)
	waitOps(40)
	p.Cont(l2)
	waitOps(40)
	stop()
	wg.Wait()
	ops := h.Ops()
	t.Logf("history: %d ops: %s", len(ops), h.Summary())
	if err := CheckLinearizable(ops, time.Minute); err != nil {
		t.Errorf("linearizability: %v", err)
	}
	if err := CheckFences(ops); err != nil {
		t.Errorf("fences: %v", err)
	}
	nl, err := p.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	read, err := ListReader(ctx, p.Locker(nl), "dur-")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckDurable(ctx, ops, "dur-", read); err != nil {
		t.Errorf("durability: %v", err)
	}
}
