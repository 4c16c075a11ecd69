package cluster

import (
	"context"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// replica is the replicated table the lock service runs on: a *Node (the
// table behind raft) or a *Local (one in-process table). The lock
// semantics are written once, in lockService, over this interface; the
// replica owns the table, the clock that stamps commands, the applied
// index and the events of what it applied.
type replica interface {
	// Apply stamps cmd with the cluster clock, applies it through the
	// log and returns its result once this replica applied it; FSM
	// refusals are in Result.Err. Commands with a ReqID are exactly-once.
	Apply(ctx context.Context, cmd *fsm.Command) (fsm.Result, error)
	// Read runs fn against the table once it is linearizable to read (at
	// once when stale), with the cluster time to evaluate deadlines at.
	Read(ctx context.Context, stale bool, fn func(t *fsm.Table, now int64)) error
	// Subscribe calls fn with every applied entry's events, in log order,
	// on the apply path.
	Subscribe(fn func(index uint64, events []fsm.Event)) (cancel func())
	// Status describes the replica and its table.
	Status(ctx context.Context) (api.Status, error)

	// awaitWaiter and stopWaiter are the waiter registry (eventHub): the
	// outcome of a blocking acquire queued under waiter id, delivered by
	// the entry that granted it or ended its wait.
	awaitWaiter(id string) <-chan waiterEvent
	stopWaiter(id string)
	// commitDemand marks a request that waits for what other nodes
	// commit (Observe), until done (eventHub).
	commitDemand() (done func())
	// requestLimits are the limits requests are validated with before
	// anything is proposed (the FSM checks the same values again).
	requestLimits() api.Limits
	// newReqID returns a request id no other replica or restart uses.
	newReqID() string
	// closing is closed when the replica closes: blocked requests end
	// with ErrClosed.
	closing() <-chan struct{}
	// deferQueuedAcquire and openHandoff are the leader's hand-off gate:
	// a blocking acquire that will queue is held back until the release
	// that moves its queue is proposed, so both share a log write
	// (no-ops where the log is not shared).
	deferQueuedAcquire(ctx context.Context, cmd *fsm.Command)
	openHandoff(cmd *fsm.Command)
	// observeWait records how long a granted acquire waited, in seconds.
	observeWait(seconds float64)
	// keyWatches is the keys' change indexes and watchers (eventHub).
	keyWatches() *keyWatches
}

var (
	_ replica = (*Node)(nil)
	_ replica = (*Local)(nil)
)

// Node as a replica: the lock service of a node runs on raft.

func (n *Node) requestLimits() api.Limits   { return limitsOf(n.limits) }
func (n *Node) closing() <-chan struct{}    { return n.closed }
func (n *Node) observeWait(seconds float64) { n.metrics.lockWait.Observe(seconds) }
