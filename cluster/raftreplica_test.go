package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// partNode is a Node with its parts and no raft or transport, its clock
// moved by the test: the parts' own state, driven as raft and the
// other parts would.
func partNode(t testing.TB, clock Clock) *Node {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ID = "part"
	cfg.DataDir = t.TempDir()
	cfg.Logger = hclog.NewNullLogger()
	cfg.Clock = clock
	cfg.RetryTimeout = 10 * time.Second
	return newNode(cfg.withDefaults(), "part-")
}

// closedNow reports whether ch is closed, without waiting.
func closedNow(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestRaftReplicaAppliedAndFloor drives the replica's applied index and
// clock floor as the FSM adapter does: the index only grows (but for a
// restore), every apply wakes the waiters, and the floor is the latest
// entry's time plus the time seen since the entry was stored.
func TestRaftReplicaAppliedAndFloor(t *testing.T) {
	type step struct {
		advance time.Duration // the clock moves first
		stored  uint64        // >0: the entry is stored now (storeTimes), applied later
		apply   uint64        // >0: setApplied(apply, at, force)
		at      int64
		force   bool

		wantApplied uint64
		wantFloor   int64 // clockFloor at the clock's reading after the step
		wantWoken   bool  // the appliedNext channel of before the step closed
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"nothing applied: no floor", []step{
			{advance: time.Second, wantApplied: 0, wantFloor: 0},
		}},
		{"floor runs on from the entry's time", []step{
			{apply: 5, at: 1000, wantApplied: 5, wantFloor: 1000, wantWoken: true},
			{advance: 250 * time.Millisecond, wantApplied: 5, wantFloor: 1250},
		}},
		{"an older index does not lower the index, but anchors the floor", []step{
			{apply: 5, at: 1000, wantApplied: 5, wantFloor: 1000, wantWoken: true},
			{advance: 100 * time.Millisecond, apply: 3, at: 1050, wantApplied: 5, wantFloor: 1050, wantWoken: true},
		}},
		{"a restore (force) sets a lower index", []step{
			{apply: 9, at: 1000, wantApplied: 9, wantFloor: 1000, wantWoken: true},
			{apply: 2, at: 500, force: true, wantApplied: 2, wantFloor: 500, wantWoken: true},
		}},
		{"the store time anchors the floor, not the apply time", []step{
			{stored: 7},
			{advance: 300 * time.Millisecond, apply: 7, at: 2000, wantApplied: 7, wantFloor: 2300, wantWoken: true},
			{advance: 100 * time.Millisecond, wantApplied: 7, wantFloor: 2400},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := &manualClock{base: time.Unix(1_700_000_000, 0)}
			n := partNode(t, clock)
			r := n.raftReplica
			for i, s := range tc.steps {
				clock.Advance(s.advance)
				if s.stored > 0 {
					r.storeTimes.stored(s.stored, s.stored, clock.Now())
				}
				before, ch := r.appliedNext()
				if s.apply > 0 {
					r.setApplied(s.apply, s.at, s.force)
				}
				if got := r.AppliedIndex(); got != s.wantApplied {
					t.Fatalf("step %d: applied %d, want %d (was %d)", i, got, s.wantApplied, before)
				}
				if got := r.clockFloor(clock.Now()); got != s.wantFloor {
					t.Fatalf("step %d: floor %d, want %d", i, got, s.wantFloor)
				}
				if got := closedNow(ch); got != s.wantWoken {
					t.Fatalf("step %d: waiters woken %v, want %v", i, got, s.wantWoken)
				}
			}
		})
	}
}

// TestRaftReplicaWaitApplied: a wait ends when the index is reached, when
// its context ends, or when the node closes, whichever comes first.
func TestRaftReplicaWaitApplied(t *testing.T) {
	tests := []struct {
		name    string
		applied uint64 // applied before the wait
		wait    uint64
		then    func(n *Node, cancel context.CancelFunc) // while the wait runs
		want    error                                    // nil, context.Canceled or ErrClosed
	}{
		{"already applied", 4, 3, nil, nil},
		{"applied meanwhile", 1, 3, func(n *Node, _ context.CancelFunc) {
			n.setApplied(2, 10, false)
			n.setApplied(3, 20, false)
		}, nil},
		{"caller gives up", 1, 3, func(_ *Node, cancel context.CancelFunc) { cancel() }, context.Canceled},
		{"node closes", 1, 3, func(n *Node, _ context.CancelFunc) { close(n.closed) }, ErrClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := partNode(t, SystemClock)
			n.setApplied(tc.applied, 1, false)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			done := make(chan error, 1)
			// Ends when the wait ends: at the latest at ctx's deadline.
			go func() { done <- n.waitApplied(ctx, tc.wait) }()
			if tc.then != nil {
				tc.then(n, cancel)
			}
			if err := <-done; !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("waitApplied = %v, want %v", err, tc.want)
			}
			if tc.want == nil && n.AppliedIndex() < tc.wait {
				t.Fatalf("wait ended at applied %d before %d", n.AppliedIndex(), tc.wait)
			}
		})
	}
}
