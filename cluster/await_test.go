package cluster

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
)

// answered is a raft future already answered with err.
type answered struct{ err error }

func (f answered) Error() error { return f.err }

// The leader waits for a proposal in the requesting goroutine: await
// starts no goroutine and makes no channel per wait (a helper goroutine
// racing the answer against the node's close was a goroutine start and
// one more hand-off per request through the leader). Fails if the wait
// goes back to a helper goroutine.
func TestAwaitAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation")
	}
	n := &raftReplica{Node: &Node{closed: make(chan struct{})}}
	renewal := &renewFuture{done: closedChan}
	for name, f := range map[string]raft.Future{"raft future": answered{}, "queued renewal": renewal} {
		if a := testing.AllocsPerRun(200, func() {
			if err := n.await(f); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("%s: await allocates %.1f times per call, want 0", name, a)
		}
	}
}

// await answers a future's own error as it is, raft's shutdown as
// ErrClosed (which classifyProposal reports as final), and a queued
// renewal that raft never answers ends when the node closes.
func TestAwaitOutcomes(t *testing.T) {
	closed := make(chan struct{})
	n := &raftReplica{Node: &Node{closed: closed}}

	if err := n.await(answered{raft.ErrNotLeader}); !errors.Is(err, raft.ErrNotLeader) || errors.Is(err, ErrClosed) {
		t.Errorf("not leader: got %v", err)
	}
	err := n.await(answered{raft.ErrRaftShutdown})
	if !errors.Is(err, ErrClosed) || !errors.Is(err, raft.ErrRaftShutdown) {
		t.Errorf("raft shut down: got %v, want ErrClosed wrapping raft.ErrRaftShutdown", err)
	}
	if oc, _ := classifyProposal(err); oc != outcomeDone {
		t.Errorf("raft shut down: outcome %v, want outcomeDone", oc)
	}
	done := make(chan struct{})
	renewalErr := errors.New("renewal refused")
	answeredRenewal := &renewFuture{done: done, err: renewalErr}
	close(done)
	if err := n.await(answeredRenewal); !errors.Is(err, renewalErr) {
		t.Errorf("answered renewal: got %v", err)
	}

	pending := &renewFuture{done: make(chan struct{})}
	got := make(chan error, 1)
	// Ends when await returns: at the close below.
	go func() { got <- n.await(pending) }()
	close(closed)
	if err := <-got; !errors.Is(err, ErrClosed) {
		t.Errorf("renewal pending at close: got %v, want ErrClosed", err)
	}
}
