package lockservice

import (
	"context"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// Replica is the replicated table the lock service runs on: a
// cluster.Node (the table behind raft) or a Local (one in-process table),
// each through an adapter, so these methods stay off their own API. The lock
// semantics are written once, in Service, over this interface; the
// replica owns the table, the clock that stamps commands, the applied
// index and the events of what it applied.
type Replica interface {
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

	// AwaitWaiter and StopWaiter are the waiter registry (Hub): the
	// outcome of a blocking acquire queued under waiter id, delivered by
	// the entry that granted it or ended its wait.
	AwaitWaiter(id string) <-chan WaiterEvent
	StopWaiter(id string)
	// CommitDemand marks a request that waits for what other nodes
	// commit (Observe), until done (Hub).
	CommitDemand() (done func())
	// RequestLimits are the limits requests are validated with before
	// anything is proposed (the FSM checks the same values again).
	RequestLimits() api.Limits
	// NewReqID returns a request id no other replica or restart uses.
	NewReqID() string
	// Closing is closed when the replica closes: blocked requests end
	// with ErrClosed.
	Closing() <-chan struct{}
	// DeferQueuedAcquire and OpenHandoff are the leader's hand-off gate:
	// a blocking acquire that will queue is held back until the release
	// that moves its queue is proposed, so both share a log write
	// (no-ops where the log is not shared).
	DeferQueuedAcquire(ctx context.Context, cmd *fsm.Command)
	OpenHandoff(cmd *fsm.Command)
	// ObserveWait records how long a granted acquire waited, in seconds.
	ObserveWait(seconds float64)
	// KeyWatches is the keys' change indexes and watchers (Hub).
	KeyWatches() *KeyWatches
}
