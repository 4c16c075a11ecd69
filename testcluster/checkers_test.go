package testcluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestCheckFencingCatches(t *testing.T) {
	cases := []struct {
		name   string
		writes []Write
		err    bool
		stale  int
	}{
		{"fenced", []Write{
			{Client: 0, Token: 5, Arrived: ms(1), SafeUntil: ms(10), Accepted: true},
			{Client: 1, Token: 9, Arrived: ms(20), SafeUntil: ms(30), Accepted: true},
			{Client: 0, Token: 5, Arrived: ms(25), SafeUntil: ms(10), Accepted: false},
		}, false, 1},
		{"stale write accepted", []Write{
			{Client: 1, Token: 9, Arrived: ms(20), SafeUntil: ms(30), Accepted: true},
			{Client: 0, Token: 5, Arrived: ms(25), SafeUntil: ms(10), Accepted: true},
		}, true, 0},
		{"write refused inside its lease", []Write{
			{Client: 1, Token: 9, Arrived: ms(2), SafeUntil: ms(30), Accepted: true},
			{Client: 0, Token: 5, Arrived: ms(3), SafeUntil: ms(10), Accepted: false},
		}, true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stale, err := CheckFencing(tc.writes)
			if (err != nil) != tc.err || (err != nil && !errors.Is(err, ErrStaleWrite)) {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if stale != tc.stale {
				t.Fatalf("stale = %d, want %d", stale, tc.stale)
			}
		})
	}
}

// An unfenced resource lets a paused holder's stale write through, and
// CheckFencing says so.
func TestCheckFencingUnfencedResource(t *testing.T) {
	h := NewHistory()
	r := &Resource{h: h, Unfenced: true}
	r.Write(1, 9, h.Now()+time.Hour)
	r.Write(0, 5, 0)
	if _, err := CheckFencing(r.Writes()); !errors.Is(err, ErrStaleWrite) {
		t.Fatalf("unfenced resource not caught: %v", err)
	}
}

func TestCheckFencesCatches(t *testing.T) {
	g := func(id int, key string, call, ret int, fence uint64) Op {
		return Op{ID: id, Kind: OpAcquire, Key: key, Call: ms(call), Return: ms(ret), Outcome: OK, Fence: fence}
	}
	cases := []struct {
		name string
		ops  []Op
		ok   bool
	}{
		{"increasing", []Op{g(0, "a", 0, 1, 3), g(1, "b", 2, 3, 4), g(2, "a", 4, 5, 9)}, true},
		{"concurrent grants may come in either order", []Op{g(0, "a", 0, 5, 9), g(1, "b", 1, 6, 4)}, true},
		{"non-monotonic across keys", []Op{g(0, "a", 0, 1, 9), g(1, "b", 2, 3, 4)}, false},
		{"same fence twice on a key", []Op{g(0, "a", 0, 5, 9), g(1, "a", 1, 6, 9)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckFences(tc.ops)
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrFenceOrder)) {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestCompareSnapshotsCatches(t *testing.T) {
	if err := CompareSnapshots(map[string][]byte{"n0": []byte("abc"), "n1": []byte("abc")}); err != nil {
		t.Fatal(err)
	}
	err := CompareSnapshots(map[string][]byte{"n0": []byte("abc"), "n1": []byte("abd"), "n2": []byte("abc")})
	if !errors.Is(err, ErrDiverged) {
		t.Fatalf("divergence not caught: %v", err)
	}
}

func TestCheckLeasesCatches(t *testing.T) {
	now := time.Now()
	ok := LeaseEnd{Owner: "a", Sent: now, TTL: time.Second, EndedBy: now.Add(1100 * time.Millisecond)}
	early := LeaseEnd{Owner: "b", Sent: now, TTL: time.Second, EndedBy: now.Add(900 * time.Millisecond)}
	if err := CheckLeases([]LeaseEnd{ok}); err != nil {
		t.Fatal(err)
	}
	if err := CheckLeases([]LeaseEnd{ok, early}); !errors.Is(err, ErrLeaseTooShort) {
		t.Fatalf("early end not caught: %v", err)
	}
}

func TestCheckDurableCatches(t *testing.T) {
	ops := []Op{
		{ID: 0, Kind: OpTryAcquire, Key: "d1", Owner: "a", Outcome: OK, Fence: 4, Return: ms(1)},
		{ID: 1, Kind: OpTryAcquire, Key: "d2", Owner: "b", Outcome: OK, Fence: 5, Return: ms(2)},
		{ID: 2, Kind: OpRelease, Key: "d2", Owner: "b", Outcome: OK, Released: true, Return: ms(3)},
	}
	state := map[string]string{"d1": "a"}
	read := func(_ context.Context, key string) (string, uint64, error) {
		if state[key] != "" {
			return state[key], 4, nil
		}
		return "", 0, nil
	}
	if err := CheckDurable(context.Background(), ops, "d", read); err != nil {
		t.Fatal(err)
	}
	state = map[string]string{"d2": "b"} // grant of d1 lost, release of d2 lost
	err := CheckDurable(context.Background(), ops, "d", read)
	if !errors.Is(err, ErrLostAck) {
		t.Fatalf("lost acks not caught: %v", err)
	}
}

// Clients that stop the world past their lease and then write are
// refused by a fenced resource; every write inside a lease gets through.
func TestFencingWithPausedClients(t *testing.T) {
	c := New(t, 3, Options{})
	h := NewHistory()
	res := NewResource(h)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const ttl = 300 * time.Millisecond
	var wg sync.WaitGroup
	var mu sync.Mutex
	paused := 0
	for w := range 3 {
		var cl *Client
		switch w {
		case 0:
			cl = c.NativeClient(h, w, w)
		case 1:
			cl = c.HTTPClient(h, w)
		default:
			cl = c.RESPClient(h, w, w, false)
		}
		defer cl.Close()
		wg.Add(1)
		go func() { // ends after its rounds
			defer wg.Done()
			for round := range 8 {
				owner := NewOwner()
				g, err := cl.Acquire(ctx, "res", owner, ttl, 5*time.Second)
				if err != nil {
					continue
				}
				safe := g.Sent.Sub(h.Start()) + ttl - ttl/10
				if round%2 == w%2 {
					// Stop the world past the lease, until a later holder
					// wrote (or, if it paused too, a while longer).
					_, _ = waitFor(ctx, 2*time.Millisecond, func() (struct{}, bool) {
						now := h.Now()
						return struct{}{}, now > safe && (res.Highest() > g.Fence || now > safe+3*ttl)
					})
					mu.Lock()
					paused++
					mu.Unlock()
				}
				res.Write(w, g.Fence, safe)
				rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
				_, _ = cl.Release(rctx, "res", owner)
				rcancel()
			}
		}()
	}
	wg.Wait()
	stale, err := CheckFencing(res.Writes())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d writes, %d stale writes refused, %d pauses; %s", len(res.Writes()), stale, paused, h.Summary())
	if stale == 0 {
		t.Fatal("no stale write was attempted: the scenario did not exercise fencing")
	}
	if err := CheckFences(h.Ops()); err != nil {
		t.Fatal(err)
	}
	if err := CheckLinearizable(h.Ops(), time.Minute); err != nil {
		t.Fatal(err)
	}
}

// Acknowledged grants and releases survive crashes of the leader and of
// followers; the nodes then converge to identical snapshots.
func TestDurableAcrossCrashesAndConverged(t *testing.T) {
	c := New(t, 3, Options{})
	h := NewHistory()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clients := []*Client{c.NativeClient(h, 0, 0), c.HTTPClient(h, 1), c.RESPClient(h, 2, 1, false), c.RESPClient(h, 3, 2, true)}
	for _, cl := range clients {
		defer cl.Close()
	}
	run := func(round int) {
		var wg sync.WaitGroup
		for i, cl := range clients {
			wg.Add(1)
			go func() { // ends after 10 operations
				defer wg.Done()
				for j := range 10 {
					key := Keys("dur-", 1)[0] + NewOwner()
					owner := NewOwner()
					octx, ocancel := context.WithTimeout(ctx, 5*time.Second)
					if _, err := cl.TryAcquire(octx, key, owner, 10*time.Minute); err == nil && (i+j+round)%2 == 0 {
						_, _ = cl.Release(octx, key, owner)
					}
					ocancel()
				}
			}()
		}
		wg.Wait()
	}
	run(0)
	l := indexOf(c, c.Leader())
	c.Crash(l)
	run(1)
	c.Restart(l)
	f := (l + 1) % 3
	c.Crash(f)
	run(2)
	c.Crash((l + 2) % 3) // no quorum: operations fail or stay unknown
	c.Restart(f)
	c.Restart((l + 2) % 3)
	run(3)
	t.Logf("history: %s", h.Summary())
	leader := c.Leader()
	if err := CheckDurable(ctx, h.Ops(), "dur-", LockerReader(leader)); err != nil {
		t.Fatal(err)
	}
	if err := CheckFences(h.Ops()); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckConverged(ctx); err != nil {
		t.Fatal(err)
	}
}

// WatchHold brackets a hold's end by what its reads saw, not by how long
// they took: a read that failed or waited (a leaderless cluster) moves
// GoneAt, never HeldSent.
func TestWatchHoldBracketsTheEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ended := start.Add(time.Second)           // the hold's end
		down := start.Add(900 * time.Millisecond) // reads hang from here...
		up := start.Add(5 * time.Second)          // ...to here
		read := func(ctx context.Context, _ string) (string, uint64, error) {
			if now := time.Now(); !now.Before(down) && now.Before(up) {
				<-ctx.Done() // no leader: the read times out
				return "", 0, ctx.Err()
			}
			if time.Now().Before(ended) {
				return "a", 7, nil
			}
			return "", 0, nil
		}
		w, err := WatchHold(context.Background(), "k", "a", 20*time.Millisecond, read)
		if err != nil {
			t.Fatal(err)
		}
		if got := w.HeldSent.Sub(start); got >= 900*time.Millisecond || got < 800*time.Millisecond {
			t.Errorf("HeldSent at %v, want the last read before the outage (880ms)", got)
		}
		if w.Failed == 0 || w.GoneAt.Before(up) || !w.GoneSent.Before(w.GoneAt.Add(time.Nanosecond)) {
			t.Errorf("watch %+v: want failed reads, and the hold found gone after the outage", w)
		}
		ttl, slack := 500*time.Millisecond, 500*time.Millisecond
		h := HoldEnd{Key: "k", Owner: "a", TTL: ttl, Last: 0, HeldSeen: w.HeldSent.Sub(start),
			GoneSent: w.GoneSent.Sub(start), EndedBy: w.GoneAt.Sub(start), Failed: w.Failed}
		if err := CheckHoldEnds([]HoldEnd{h}, slack); err != nil {
			t.Errorf("the outage's reads were blamed on the hold: %v", err)
		}
	})
}

// slowestRate takes the rate each node ran at when the window began and
// every rate set within it.
func TestSlowestRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	c := &Cluster{clocks: make([]*skewClock, 3), rates: []rateChange{
		{at(1), 0, 0.5}, {at(2), 0, 1}, {at(5), 1, 0.9}, {at(8), 2, 0.5},
	}}
	for _, tc := range []struct {
		from, to int
		want     float64
	}{
		{0, 1, 0.5}, // set at the window's end
		{3, 4, 1},   // node 0 back to 1 before it
		{3, 6, 0.9},
		{9, 10, 0.5}, // node 2 still slow
		{1, 3, 0.5},  // node 0 slow when it began
	} {
		if got := slowestRate(c, at(tc.from), at(tc.to)); got != tc.want {
			t.Errorf("slowestRate(%ds, %ds) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}
