package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm"
)

// TestLeaderTermHandoffGate drives the leader term's hand-off gate
// alone: a blocking exclusive acquire of a lock another owner holds is
// held back on a ready term until a release of that key is proposed
// (openHandoff), the term ends, or its caller gives up; every other
// acquire, and every acquire off a ready term, goes at once.
func TestLeaderTermHandoffGate(t *testing.T) {
	const hour = int64(time.Hour / time.Millisecond)
	blocking := func(key string) *fsm.Command {
		return &fsm.Command{Op: fsm.OpAcquire, Key: key, Owner: "b", TTL: 60000, Wait: hour}
	}
	tests := []struct {
		name    string
		cmd     *fsm.Command
		term    string                                           // "none", "setting up" or "ready"
		release func(n *Node, l *leadership, cancel func()) bool // nil: goes at once; else lets it go, false if it must stay held
	}{
		{name: "no wait", cmd: &fsm.Command{Op: fsm.OpAcquire, Key: "k", Owner: "b", TTL: 60000}, term: "ready"},
		{name: "shared mode", cmd: &fsm.Command{Op: fsm.OpAcquire, Key: "k", Owner: "b", TTL: 60000, Wait: hour, Mode: fsm.Shared}, term: "ready"},
		{name: "several keys", cmd: &fsm.Command{Op: fsm.OpAcquire, Keys: []string{"k"}, Owner: "b", TTL: 60000, Wait: hour}, term: "ready"},
		{name: "a follower", cmd: blocking("k"), term: "none"},
		{name: "a term still setting up", cmd: blocking("k"), term: "setting up"},
		{name: "a free lock", cmd: blocking("free"), term: "ready"},
		{name: "held until its key's release", cmd: blocking("k"), term: "ready",
			release: func(n *Node, _ *leadership, _ func()) bool {
				n.openHandoff(&fsm.Command{Op: fsm.OpRelease, Key: "other"})
				if n.readyLead().handoff.waiting("k") != 1 {
					return false
				}
				n.openHandoff(&fsm.Command{Op: fsm.OpRelease, Key: "k", Owner: "a"})
				return true
			}},
		{name: "held until a script's release of its keys", cmd: blocking("k"), term: "ready",
			release: func(n *Node, _ *leadership, _ func()) bool {
				n.openHandoff(&fsm.Command{Op: fsm.OpEval, Keys: []string{"x", "k"}})
				return true
			}},
		{name: "held until the term ends", cmd: blocking("k"), term: "ready",
			release: func(_ *Node, l *leadership, _ func()) bool { close(l.done); return true }},
		{name: "held until the caller gives up", cmd: blocking("k"), term: "ready",
			release: func(_ *Node, _ *leadership, cancel func()) bool { cancel(); return true }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := partNode(t, SystemClock)
			now := time.Now().UnixMilli()
			if r := n.table.Apply(1, &fsm.Command{Op: fsm.OpAcquire, Key: "k", Owner: "a", TTL: 60000, Time: now}); r.Err != nil {
				t.Fatal(r.Err)
			}
			l := &leadership{ready: make(chan struct{}), done: make(chan struct{})}
			l.handoff.maxDefer = time.Hour // only the release lets it go
			switch tc.term {
			case "ready":
				close(l.ready)
				n.lead.Store(l)
			case "setting up":
				n.lead.Store(l)
			}
			if got := n.IsLeader(); got != (tc.term == "ready") {
				t.Fatalf("IsLeader = %v on a term %s", got, tc.term)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done := make(chan struct{})
			// Ends when the gate lets the acquire go: at the latest at ctx's end.
			go func() {
				defer close(done)
				n.deferQueuedAcquire(ctx, tc.cmd)
			}()
			if tc.release != nil {
				deadline := time.Now().Add(10 * time.Second)
				for l.handoff.waiting("k") != 1 {
					if time.Now().After(deadline) || closedNow(done) {
						t.Fatal("the acquire was not held back")
					}
					time.Sleep(time.Millisecond)
				}
				if closedNow(done) {
					t.Fatal("the acquire went before its release")
				}
				if !tc.release(n, l, cancel) {
					t.Fatal("the acquire went at another key's release")
				}
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the acquire is still held back")
			}
			if w := l.handoff.waiting("k"); w != 0 {
				t.Fatalf("%d acquires still registered at the gate", w)
			}
		})
	}
}
