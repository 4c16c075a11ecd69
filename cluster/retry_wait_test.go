package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/transport"
)

// lostAnswerTransport delivers the first forwarded acquire with request
// id reqID to the leader, runs between, then loses the answer (an
// ErrConnLost, as when the connection drops after the leader took the
// request): the node must retry it.
type lostAnswerTransport struct {
	Transport
	reqID   string
	between func() error

	mu   sync.Mutex
	done bool  // the first attempt was taken
	lost bool  // between is over and the answer lost
	err  error // between's
}

func (l *lostAnswerTransport) Call(ctx context.Context, addr string, req []byte) ([]byte, error) {
	resp, err := l.Transport.Call(ctx, addr, req)
	if err != nil || len(req) == 0 || req[0] != rpcApply {
		return resp, err
	}
	cmd, derr := fsm.DecodeCommand(req[1:])
	if derr != nil || cmd.Op != fsm.OpAcquire || cmd.ReqID != l.reqID {
		return resp, err
	}
	l.mu.Lock()
	first := !l.done
	l.done = true
	l.mu.Unlock()
	if !first {
		return resp, err
	}
	berr := l.between()
	l.mu.Lock()
	l.lost, l.err = true, berr
	l.mu.Unlock()
	return nil, fmt.Errorf("test: answer dropped: %w", transport.ErrConnLost)
}

func (l *lostAnswerTransport) betweenErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		return fmt.Errorf("the acquire was never forwarded")
	}
	return l.err
}

// until polls cond every 5ms until it holds or timeout passes.
func until(timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// within waits until ch is closed, at most timeout.
func within(ch <-chan struct{}, timeout time.Duration, what string) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return fmt.Errorf("timed out after %v waiting for %s", timeout, what)
	}
}

// waitersOf reads key's queue on n (local, stale: what n has applied).
func waitersOf(n *Node, key string) ([]string, error) {
	var ids []string
	err := n.Read(context.Background(), true, func(t *fsm.Table, now int64) {
		if li, err := t.Inspect(key, now); err == nil {
			for _, w := range li.Waiters {
				ids = append(ids, w.ID)
			}
		}
	})
	return ids, err
}

// A blocking acquire forwarded by a follower whose answer is lost is
// retried with the same request id. Whatever happened to the first
// attempt's wait before the retry was applied, the caller must get the
// outcome of the wait that is actually queued: chaos seed 8007 caught a
// caller told "wait timed out" (the first wait's end) while the retry
// had queued the id again and was then granted — a hold nobody knew of.
func TestAcquireRetryAfterLostAnswer(t *testing.T) {
	const key, reqID = "k", "rq-1"
	const wait = 2000 // ms: each wait must outlast the test's own steps on a loaded machine
	cases := []struct {
		name string
		// between runs after the leader took the first attempt and before
		// its answer is lost; leader is the leader, f the follower, and
		// timedOut is closed once f applied the end of a wait of reqID.
		between func(leader, f *Node, timedOut <-chan struct{}) error
		// releaseAfter: release the holder once the retry has queued.
		releaseAfter bool
	}{
		{"first wait timed out, retry queued again", func(leader, f *Node, timedOut <-chan struct{}) error {
			// The first wait's end is applied on f (so it reached f's
			// waiter channel) before the retry is sent.
			return within(timedOut, 10*time.Second, "the first wait to time out on the follower")
		}, true},
		{"first wait timed out, key free at the retry", func(leader, f *Node, timedOut <-chan struct{}) error {
			if err := within(timedOut, 10*time.Second, "the first wait to time out on the follower"); err != nil {
				return err
			}
			_, err := leader.Release(context.Background(), api.ReleaseRequest{Key: key, Owner: "h"})
			return err
		}, false},
		{"first wait still queued at the retry", func(leader, f *Node, _ <-chan struct{}) error { return nil }, true},
		{"first wait granted before the retry", func(leader, f *Node, _ <-chan struct{}) error {
			if _, err := leader.Release(context.Background(), api.ReleaseRequest{Key: key, Owner: "h"}); err != nil {
				return err
			}
			return until(10*time.Second, "the first wait's grant on the follower", func() (bool, error) {
				held := false
				err := f.Read(context.Background(), true, func(t *fsm.Table, now int64) {
					li, err := t.Inspect(key, now)
					held = err == nil && len(li.Holders) == 1 && li.Holders[0].Owner == "w"
				})
				return held, err
			})
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lts := map[string]*lostAnswerTransport{}
			c := newTestCluster(t, 3, func(cfg *Config) {
				lt := &lostAnswerTransport{Transport: cfg.Transport, reqID: reqID}
				lts[cfg.ID] = lt
				cfg.Transport = lt
			})
			leader := c.leader(10 * time.Second)
			f := c.follower()
			lt := lts[f.ID()]
			timedOut := make(chan struct{})
			var once sync.Once
			defer f.Subscribe(func(_ uint64, evs []fsm.Event) {
				for _, e := range evs {
					if e.Kind == fsm.EvWaitEnded && e.WaiterID == reqID {
						once.Do(func() { close(timedOut) })
					}
				}
			})()
			lt.between = func() error { return tc.between(leader, f, timedOut) }

			ctx := ctxT(t, 30*time.Second)
			if _, err := leader.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "h", TTLMs: 60000}); err != nil {
				t.Fatal(err)
			}
			type result struct {
				l   api.Lease
				err error
			}
			done := make(chan result, 1)
			go func() { // ends when the acquire returns (granted, or its wait or ctx ends)
				l, err := f.Acquire(ctx, api.AcquireRequest{Key: key, Owner: "w", TTLMs: 60000, WaitMs: wait, RequestID: reqID})
				done <- result{l, err}
			}()
			if tc.releaseAfter {
				// The retry is queued once between is over and f shows a
				// waiter (f applied the first wait's end, if any, before).
				c.eventually(10*time.Second, "the retry queued", func() bool {
					ids, err := waitersOf(f, key)
					if err != nil {
						t.Fatal(err)
					}
					lt.mu.Lock()
					retried := lt.lost && lt.err == nil
					lt.mu.Unlock()
					return retried && len(ids) == 1
				})
				if _, err := leader.Release(ctx, api.ReleaseRequest{Key: key, Owner: "h"}); err != nil {
					t.Fatal(err)
				}
			}
			var r result
			select {
			case r = <-done:
			case <-ctx.Done():
				t.Fatal("acquire never returned")
			}
			if err := lt.betweenErr(); err != nil {
				t.Fatal(err)
			}
			if r.err != nil {
				t.Fatalf("acquire: %v (want granted: the wait it retried is granted)", r.err)
			}
			li, err := leader.Inspect(ctx, key, api.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(li.Holders) != 1 || li.Holders[0].Owner != "w" || li.Holders[0].Fence != r.l.Fence {
				t.Fatalf("acquire granted fence %d; table: %+v", r.l.Fence, li)
			}
			if len(li.Waiters) != 0 {
				t.Fatalf("waiters left: %+v", li.Waiters)
			}
		})
	}
}
