package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm"
)

// gateTransport holds the first batch call a node sends until release is
// closed, and reports each batch call as it starts.
type gateTransport struct {
	Transport
	release chan struct{}
	started chan int // the command count of each batch call, as it starts

	mu    sync.Mutex
	calls int
}

func (g *gateTransport) Call(ctx context.Context, addr string, req []byte) ([]byte, error) {
	if len(req) == 0 || (req[0] != rpcApplyBatch && req[0] != rpcApplyBatchHinted) {
		return g.Transport.Call(ctx, addr, req)
	}
	g.mu.Lock()
	g.calls++
	first := g.calls == 1
	g.mu.Unlock()
	d := fsm.NewDecoder(req[1:])
	g.started <- int(d.Uvarint())
	if first {
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Transport.Call(ctx, addr, req)
}

// TestForwardSecondCall: on a follower, Apply's command queued while a
// call of other Apply commands is in flight goes at once in a second call
// (it does not wait for the first one's answer); one queued behind a call
// that carries an asynchronous command waits for its answer, so it
// commits after that command.
func TestForwardSecondCall(t *testing.T) {
	for _, asyncFirst := range []bool{false, true} {
		name := "after Apply"
		if asyncFirst {
			name = "after ApplyAsync"
		}
		t.Run(name, func(t *testing.T) {
			gts := map[string]*gateTransport{}
			tc := newTestCluster(t, 3, func(cfg *Config) {
				g := &gateTransport{Transport: cfg.Transport, release: make(chan struct{}), started: make(chan int, 16)}
				gts[cfg.ID] = g
				cfg.Transport = g
			})
			tc.leader(10 * time.Second)
			f := tc.follower()
			g := gts[f.ID()]
			ctx := ctxT(t, 30*time.Second)
			released := false
			release := func() {
				if !released {
					released = true
					close(g.release)
				}
			}
			defer release()

			type answer struct {
				res fsm.Result
				err error
			}
			first := make(chan answer, 1)
			if asyncFirst {
				fu := f.ApplyAsync(ctx, incr("ctr"))
				// Ends when the future completes (release or the test's ctx).
				go func() {
					r, err := fu.Result()
					first <- answer{r, err}
				}()
			} else {
				// Ends when Apply returns (release or the test's ctx).
				go func() {
					r, err := f.Apply(ctx, incr("ctr"))
					first <- answer{r, err}
				}()
			}
			waitStarted(t, g, 1)

			second := make(chan answer, 1)
			// Ends when Apply returns.
			go func() {
				r, err := f.Apply(ctx, incr("ctr"))
				second <- answer{r, err}
			}()
			if !asyncFirst {
				// Sent while the first call is held.
				waitStarted(t, g, 1)
			} else {
				// Queued, and no sender may take it beside the call of the
				// asynchronous command: checked under the queue's lock once
				// it is queued, so no second call can have started either.
				deadline := time.Now().Add(10 * time.Second)
				for {
					f.fwd.mu.Lock()
					queued, senders := len(f.fwd.items), f.fwd.senders
					f.fwd.mu.Unlock()
					if queued == 1 {
						if senders != 1 {
							t.Fatalf("%d senders beside a call of an asynchronous command", senders)
						}
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the second command was never queued")
					}
					time.Sleep(time.Millisecond)
				}
				if len(g.started) != 0 {
					t.Fatal("a second call started beside a call of an asynchronous command")
				}
			}
			release()
			a1, a2 := <-first, <-second
			if a1.err != nil || a2.err != nil {
				t.Fatalf("answers: %v, %v", a1.err, a2.err)
			}
			if asyncFirst && a2.res.Index <= a1.res.Index {
				t.Fatalf("the command queued behind the asynchronous one committed first (%d, %d)", a2.res.Index, a1.res.Index)
			}
			if got := readCounter(t, f, "ctr"); got != 2 {
				t.Fatalf("counter %d, want 2", got)
			}
		})
	}
}

// waitStarted waits for a batch call of want commands to start.
func waitStarted(t *testing.T, g *gateTransport, want int) {
	t.Helper()
	select {
	case n := <-g.started:
		if n != want {
			t.Fatalf("a batch call of %d commands, want %d", n, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no batch call started")
	}
}
