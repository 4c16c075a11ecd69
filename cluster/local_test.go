package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

func newTestLocal(t *testing.T, cfg LocalConfig) *Local {
	t.Helper()
	l, err := NewLocal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// manualClock moves only when the test says so.
type manualClock struct {
	base time.Time
	adv  atomic.Int64
}

func (c *manualClock) Now() time.Time          { return c.base.Add(time.Duration(c.adv.Load())) }
func (c *manualClock) Advance(d time.Duration) { c.adv.Add(int64(d)) }

func TestLocalConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  LocalConfig
		ok   bool
	}{
		{"defaults", LocalConfig{}, true},
		{"tick under 1ms", LocalConfig{TickInterval: time.Microsecond}, false},
		{"negative cancel timeout", LocalConfig{CancelTimeout: -time.Second}, false},
		{"bad fsm limits", LocalConfig{FSM: fsm.Config{MinTTL: 10, MaxTTL: 5}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrConfig) {
				t.Fatalf("Validate = %v, want ErrConfig", err)
			}
			if _, nerr := NewLocal(tc.cfg); (nerr == nil) != tc.ok {
				t.Fatalf("NewLocal = %v, want ok=%v", nerr, tc.ok)
			}
		})
	}
}

// The lock API over a Local answers as over a Node: the same code.
func TestLocalLockSemantics(t *testing.T) {
	ctx := ctxT(t, 10*time.Second)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, l *Local)
	}{
		{"exclusive refuses a second owner", func(t *testing.T, l *Local) {
			if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "a", TTLMs: 10000}); err != nil {
				t.Fatal(err)
			}
			if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "b", TTLMs: 10000}); !errors.Is(err, api.ErrLocked) {
				t.Fatalf("second owner: %v, want ErrLocked", err)
			}
		}},
		{"fences grow", func(t *testing.T, l *Local) {
			a, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "a", TTLMs: 10000})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Release(ctx, api.ReleaseRequest{Key: "k", Owner: "a"}); err != nil {
				t.Fatal(err)
			}
			b, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "b", TTLMs: 10000})
			if err != nil {
				t.Fatal(err)
			}
			if b.Fence <= a.Fence {
				t.Fatalf("fences %d then %d", a.Fence, b.Fence)
			}
		}},
		{"a request id is answered once", func(t *testing.T, l *Local) {
			req := api.AcquireRequest{Key: "k", Owner: "a", TTLMs: 10000, RequestID: "r1"}
			a, err := l.TryAcquire(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := l.TryAcquire(ctx, req)
			if err != nil || b.Fence != a.Fence {
				t.Fatalf("repeat: %+v %v, want fence %d", b, err, a.Fence)
			}
		}},
		{"the embedded API refuses a zero TTL", func(t *testing.T, l *Local) {
			if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "a"}); !errors.Is(err, api.ErrBadRequest) {
				t.Fatalf("ttl 0: %v, want ErrBadRequest", err)
			}
		}},
		{"fence check", func(t *testing.T, l *Local) {
			a, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "a", TTLMs: 10000})
			if err != nil {
				t.Fatal(err)
			}
			if r, err := l.FenceCheck(ctx, "db", a.Fence); err != nil || !r.OK {
				t.Fatalf("current fence: %+v %v", r, err)
			}
			if r, err := l.FenceCheck(ctx, "db", a.Fence-1); err != nil || r.OK {
				t.Fatalf("older fence: %+v %v", r, err)
			}
			if _, err := l.FenceCheck(ctx, "db", a.Fence+100); !errors.Is(err, api.ErrBadRequest) {
				t.Fatalf("fence never granted: %v, want ErrBadRequest", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newTestLocal(t, LocalConfig{}))
		})
	}
}

// A queued acquire is granted by the release, in FIFO order, and a
// lease's end is applied by the tick loop without client traffic.
func TestLocalWaitersAndExpiry(t *testing.T) {
	l := newTestLocal(t, LocalConfig{})
	ctx := ctxT(t, 10*time.Second)
	if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "a", TTLMs: 10000}); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	// Ends when the acquire is answered.
	go func() {
		_, err := l.Acquire(ctx, api.AcquireRequest{Key: "k", Owner: "b", TTLMs: 300, WaitMs: 5000})
		got <- err
	}()
	waitLocal(t, l, "b queued", func(st api.Status) bool { return st.Waiters == 1 })
	if _, err := l.Release(ctx, api.ReleaseRequest{Key: "k", Owner: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	// b's 300ms lease ends by itself.
	waitLocal(t, l, "b's lease ended", func(st api.Status) bool { return st.Locks == 0 })
}

// A caller giving up leaves the queue through the log.
func TestLocalCancelledWaitLeavesQueue(t *testing.T) {
	l := newTestLocal(t, LocalConfig{})
	ctx := ctxT(t, 10*time.Second)
	if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "a", TTLMs: 10000}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	got := make(chan error, 1)
	// Ends when the acquire is answered.
	go func() {
		_, err := l.Acquire(wctx, api.AcquireRequest{Key: "k", Owner: "b", TTLMs: 1000})
		got <- err
	}()
	waitLocal(t, l, "b queued", func(st api.Status) bool { return st.Waiters == 1 })
	cancel()
	if err := <-got; !errors.Is(err, api.ErrCancelled) {
		t.Fatalf("cancelled wait: %v, want ErrCancelled", err)
	}
	waitLocal(t, l, "queue empty", func(st api.Status) bool { return st.Waiters == 0 })
}

// With a manual clock, time moves only with the clock: a session ends
// when the clock passes its TTL and a Tick is applied.
func TestLocalManualClockSessionEnd(t *testing.T) {
	clk := &manualClock{base: time.Now()}
	l := newTestLocal(t, LocalConfig{Clock: clk})
	ctx := ctxT(t, 10*time.Second)
	s, err := l.OpenSession(ctx, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "a", TTLMs: 60000, Session: s.ID}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(1900 * time.Millisecond)
	if _, err := l.Apply(ctx, &fsm.Command{Op: fsm.OpTick}); err != nil {
		t.Fatal(err)
	}
	if info, err := l.Inspect(ctx, "k", api.ReadOptions{}); err != nil || len(info.Holders) != 1 {
		t.Fatalf("before the session's end: %+v %v", info, err)
	}
	clk.Advance(200 * time.Millisecond)
	if _, err := l.Apply(ctx, &fsm.Command{Op: fsm.OpTick}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Inspect(ctx, "k", api.ReadOptions{}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("after the session's end: %v, want ErrNotFound", err)
	}
	if _, err := l.KeepAlive(ctx, s.ID); !errors.Is(err, api.ErrSessionExpired) {
		t.Fatalf("keepalive of the ended session: %v, want ErrSessionExpired", err)
	}
}

// Elections run on the same lock service: a second candidate leads
// once the first resigns, and Observe sees both.
func TestLocalElection(t *testing.T) {
	l := newTestLocal(t, LocalConfig{})
	ctx := ctxT(t, 10*time.Second)
	s1, err := l.OpenSession(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := l.OpenSession(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := l.Observe(ctx, "e")
	if err != nil {
		t.Fatal(err)
	}
	if ld := <-obs; ld.Value != "" {
		t.Fatalf("first observation %+v, want no leader", ld)
	}
	one, err := l.Campaign(ctx, api.CampaignRequest{Election: "e", Value: "one", Session: s1.ID})
	if err != nil {
		t.Fatal(err)
	}
	if ld := <-obs; ld.Value != "one" {
		t.Fatalf("observed %+v, want one", ld)
	}
	got := make(chan api.Leader, 1)
	// Ends when the campaign is answered (ctx bounds it).
	go func() {
		ld, err := l.Campaign(ctx, api.CampaignRequest{Election: "e", Value: "two", Session: s2.ID})
		if err != nil {
			t.Error(err)
		}
		got <- ld
	}()
	waitLocal(t, l, "two queued", func(st api.Status) bool { return st.Waiters == 1 })
	if err := l.Resign(ctx, one); err != nil {
		t.Fatal(err)
	}
	two := <-got
	if two.Fence <= one.Fence {
		t.Fatalf("fences %d then %d", one.Fence, two.Fence)
	}
	for ld := range obs {
		if ld.Value == "two" {
			return
		}
	}
	t.Fatal("Observe closed before two led")
}

// waitLocal waits, without polling, until cond holds for l's Status.
func waitLocal(t *testing.T, l *Local, what string, cond func(api.Status) bool) {
	t.Helper()
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	for {
		_, next := l.Applied()
		st, err := l.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if cond(st) {
			return
		}
		select {
		case <-next:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s: %+v", what, st)
		}
	}
}
