package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster/lockservice"
	"github.com/locknode/locknode/fsm"
)

// ApplyAsync proposes cmd like Apply but does not wait for the commit on
// the leader: it returns as soon as the proposal is queued (encoded: once
// it returned, whatever the outcome, it keeps no reference to cmd nor to
// the bytes its fields point to, so a caller may reuse both), and commands
// proposed one after another from one goroutine are committed in that
// order (so a connection's pipeline group-commits: one log write and one
// replication round for many commands). Result waits for the outcome.
//
// At most maxAsyncInFlight proposals of a node wait for their commit;
// more wait in ApplyAsync for a slot (within ctx).
//
// A ready leader proposes at once. A follower that knows the leader
// queues cmd for it: queued commands are forwarded in batches, in order,
// and each Result comes once this node has applied the command
// (forward_batch.go); so does any node while commands are queued there
// (a leader's earlier ones from its time as a follower). Elsewhere (no
// leader known, or a leader still setting up its term, nothing queued)
// ApplyAsync runs Apply to the end before it returns, which keeps the
// order too.
//
// Unlike Apply, an asynchronous proposal is not retried when raft refuses
// it because leadership was lost before it was stored: a later command of
// the same goroutine may already be committed by then, and a retry would
// reorder them. Such a refusal (the command was not applied) wraps
// api.ErrNoLeader; a lost leadership after the proposal was stored wraps
// ErrUnknownOutcome as with Apply. A proposal abandoned at shutdown ends
// with ErrClosed.
func (n *forwarder) ApplyAsync(ctx context.Context, cmd *fsm.Command) fsm.Future {
	l := n.lead.Load()
	queued := n.fwd.busy()
	if l != nil && !queued {
		select {
		case <-l.ready:
			return n.proposeAsync(ctx, l, cmd)
		default:
		}
	}
	if !queued && l == nil {
		_, id := n.raft.LeaderWithID()
		queued = id != "" && string(id) != n.id
	}
	if queued {
		// Behind the commands queued while this node was a follower
		// (the caller's earlier ones among them), or for the leader
		// known elsewhere. The queue's sender waits for a leader, or
		// for this node's term to be ready, and keeps the order.
		if f := n.takeAsyncSlot(ctx); f != nil {
			return f
		}
		return n.forwardAsync(cmd)
	}
	// A failed Apply may leave its command with a forward still queued
	// (Apply's doc); this one is the caller's, and ApplyAsync keeps
	// nothing of it once it returns: Apply gets a copy of its own. Rare
	// (no leader known, or its term setting up), so the copy costs little.
	own, err := fsm.DecodeCommand(cmd.AppendBinary(make([]byte, 0, lockservice.EncodedSizeHint(cmd))))
	if err != nil {
		// Not reached: the encoding is this node's own.
		return &applyFuture{n: n.Node, done: closedChan, err: fmt.Errorf("cluster: command: %w", err)}
	}
	r, err := n.Apply(ctx, own)
	return &applyFuture{n: n.Node, done: closedChan, res: r, err: err}
}

// closedChan is the Done of futures complete from the start.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// maxAsyncInFlight bounds a node's asynchronous proposals not yet
// answered. Without it, deep pipelines on many connections put thousands
// of entries between the leader's log tail and its followers: replication
// then reads them back from the log store instead of raft's LogCache
// (logCacheSize, two batches of MaxAppendEntries), which costs far more
// CPU than it saves (measured: 128 connections with 100-deep pipelines
// filled 10,000 locks/s unbounded against 14,000 one at a time).
const maxAsyncInFlight = 256

func (n *forwarder) proposeAsync(ctx context.Context, l *leadership, cmd *fsm.Command) *applyFuture {
	if f := n.takeAsyncSlot(ctx); f != nil {
		return f
	}
	f := &applyFuture{n: n.Node, done: make(chan struct{})}
	win := n.asyncWindow
	start := time.Now()
	rf := n.propose(l, cmd)
	if f2, ok := rf.(*renewFuture); ok {
		// Answered with its entry's other renewals, by the goroutine that
		// answers them: no goroutine of its own.
		n.onAnswered(f2, func() {
			f.complete(rf)
			<-win
			n.metrics.applyLatency.Observe(time.Since(start).Seconds())
			close(f.done)
		})
		return f
	}
	// Ends when raft answers rf: at once if it was refused, else after the
	// commit. Raft never answers a proposal still queued when it shuts
	// down; this goroutine then stays blocked (as await's does) holding
	// its slot of the closed node's window, and Result returns on
	// n.closed.
	go func() {
		f.complete(rf)
		<-win
		n.metrics.applyLatency.Observe(time.Since(start).Seconds())
		close(f.done)
	}()
	return f
}

// takeAsyncSlot waits for a slot of n.asyncWindow. It returns nil once
// it has one, or a completed future with the reason it has none.
func (n *forwarder) takeAsyncSlot(ctx context.Context) *applyFuture {
	select {
	case n.asyncWindow <- struct{}{}:
		return nil
	default:
	}
	f := &applyFuture{n: n.Node, done: closedChan}
	select {
	case n.asyncWindow <- struct{}{}:
		return nil
	case <-ctx.Done():
		f.err = ctx.Err()
	case <-n.closed:
		f.err = ErrClosed
	}
	return f
}

// applyFuture implements fsm.Future; res and err are written once,
// before done closes.
type applyFuture struct {
	n    *Node
	done chan struct{}
	res  fsm.Result
	err  error
}

func (f *applyFuture) complete(rf raft.ApplyFuture) {
	if err := rf.Error(); err != nil {
		switch oc, err := classifyProposal(err); oc {
		case outcomeNotReached:
			f.err = fmt.Errorf("%w: %w", api.ErrNoLeader, err)
		case outcomeUnknown:
			f.err = fmt.Errorf("%w: %w: %v", ErrUnknownOutcome, api.ErrNoLeader, err)
		default:
			f.err = err
		}
		return
	}
	f.res, f.err = proposalResult(rf)
}

func (f *applyFuture) Done() <-chan struct{} { return f.done }

func (f *applyFuture) Result() (fsm.Result, error) {
	select {
	case <-f.done:
	case <-f.n.closed:
		select {
		case <-f.done: // answered before the close: report it
		default:
			return fsm.Result{}, fmt.Errorf("%w: %w", ErrClosed, raft.ErrRaftShutdown)
		}
	}
	if f.err != nil {
		return fsm.Result{}, f.err
	}
	return f.res, nil
}
