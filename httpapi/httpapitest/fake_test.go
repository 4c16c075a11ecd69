package httpapitest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
)

// The hooks the tests of other packages lean on, over the real lock
// semantics.
func TestFakeHooks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, f *Fake)
	}{
		{"calls and request ids are recorded", func(t *testing.T, f *Fake) {
			req := api.AcquireRequest{Key: "k", Owner: "a", TTLMs: 1000, RequestID: "r1"}
			for range 2 {
				if _, err := f.TryAcquire(ctx, req); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := f.Release(ctx, api.ReleaseRequest{Key: "k", Owner: "a", RequestID: "r2"}); err != nil {
				t.Fatal(err)
			}
			if got := f.RequestIDs(); !slices.Equal(got, []string{"r1", "r1", "r2"}) {
				t.Fatalf("RequestIDs = %v", got)
			}
			if f.Calls("TryAcquire") != 2 || f.Calls("Release") != 1 || f.Calls("Extend") != 0 {
				t.Fatalf("calls: try %d release %d extend %d", f.Calls("TryAcquire"), f.Calls("Release"), f.Calls("Extend"))
			}
		}},
		{"Fail fails every call until cleared", func(t *testing.T, f *Fake) {
			f.Fail(api.ErrNoLeader)
			if _, err := f.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "a", TTLMs: 1000}); !errors.Is(err, api.ErrNoLeader) {
				t.Fatalf("failing: %v", err)
			}
			if _, err := f.Status(ctx); !errors.Is(err, api.ErrNoLeader) {
				t.Fatalf("failing status: %v", err)
			}
			if _, _, ok := f.Holder("k"); ok {
				t.Fatal("a failed call changed the table")
			}
			f.Fail(nil)
			if _, err := f.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "a", TTLMs: 1000}); err != nil {
				t.Fatal(err)
			}
		}},
		{"Holder, Waiters and Changed follow the table", func(t *testing.T, f *Fake) {
			l, err := f.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "a", TTLMs: 60000})
			if err != nil {
				t.Fatal(err)
			}
			if owner, fence, ok := f.Holder("k"); !ok || owner != "a" || fence != l.Fence {
				t.Fatalf("Holder = %q %d %v", owner, fence, ok)
			}
			got := make(chan error, 1)
			// Ends when the acquire is answered.
			go func() {
				_, err := f.Acquire(ctx, api.AcquireRequest{Key: "k", Owner: "b", TTLMs: 60000})
				got <- err
			}()
			for {
				changed := f.Changed() // before the look: no change is missed
				if f.Waiters() == 1 {
					break
				}
				select {
				case <-changed:
				case <-ctx.Done():
					t.Fatal("b never queued")
				}
			}
			if _, err := f.Release(ctx, api.ReleaseRequest{Key: "k", Owner: "a"}); err != nil {
				t.Fatal(err)
			}
			if err := <-got; err != nil {
				t.Fatal(err)
			}
			if owner, _, _ := f.Holder("k"); owner != "b" || f.Waiters() != 0 {
				t.Fatalf("after the hand-off: holder %q, %d waiters", owner, f.Waiters())
			}
		}},
		{"ExpireSession releases its holds", func(t *testing.T, f *Fake) {
			s, err := f.OpenSession(ctx, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "a", Session: s.ID, TTLMs: 60000}); err != nil {
				t.Fatal(err)
			}
			f.ExpireSession(s.ID)
			if _, _, ok := f.Holder("k"); ok {
				t.Fatal("still held after the session ended")
			}
			if _, err := f.KeepAlive(ctx, s.ID); !errors.Is(err, api.ErrSessionExpired) {
				t.Fatalf("keepalive: %v", err)
			}
		}},
		{"members join Status", func(t *testing.T, f *Fake) {
			if err := f.AddVoter(ctx, "n2", "addr2"); err != nil {
				t.Fatal(err)
			}
			if err := f.AddVoter(ctx, "n2", "elsewhere"); !errors.Is(err, api.ErrConflict) {
				t.Fatalf("moved member: %v", err)
			}
			st, err := f.Status(ctx)
			if err != nil || st.ID != "fake" || st.Leader != "fake" || len(st.Members) != 2 || st.Members[1].ID != "n2" {
				t.Fatalf("Status = %+v %v", st, err)
			}
			if err := f.RemoveServer(ctx, "n2"); err != nil {
				t.Fatal(err)
			}
			if err := f.RemoveServer(ctx, "n2"); !errors.Is(err, api.ErrNotFound) {
				t.Fatalf("second remove: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFake()
			t.Cleanup(func() { _ = f.Close() })
			tc.run(t, f)
		})
	}
}
