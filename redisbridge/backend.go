package redisbridge

import (
	"context"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// Backend is what the bridge needs from a node; *cluster.Node implements
// it. Defined here, by its consumer, so the bridge can be tested against
// a single in-process table.
type Backend interface {
	// Apply proposes cmd through the leader (forwarding from a follower)
	// and returns its result once committed and applied locally. The node
	// stamps cmd.Time. Errors wrap api.ErrNoLeader when no leader is
	// reachable; FSM refusals are in Result.Err, not the error. Once it
	// returned without an error it keeps no reference to cmd: the bridge
	// reuses it for the connection's next write.
	Apply(ctx context.Context, cmd *fsm.Command) (fsm.Result, error)
	// Read runs fn against the local table once it is linearizable to
	// read (ReadIndex through the leader), or at once when stale is true.
	// now is the cluster clock to evaluate deadlines with. fn must not
	// keep t or mutate it.
	Read(ctx context.Context, stale bool, fn func(t *fsm.Table, now int64)) error
	// Subscribe calls fn for every applied entry's events, in log order,
	// on the apply path: fn must not block. cancel stops it.
	Subscribe(fn func(index uint64, events []fsm.Event)) (cancel func())
	// WaitCommitted blocks until index is committed by a quorum; it is
	// WAIT's answer (a committed write is replicated to a majority).
	WaitCommitted(ctx context.Context, index uint64) error

	// The typed lock API serves LOCK.* and FENCE.CHECK (blocking waits
	// included).
	api.Locker
}

// asyncBackend is a Backend that can propose without waiting for the
// commit (*cluster.Node): the bridge then group-commits a connection's
// pipelined writes (pipeline.go). Commands proposed one after another
// from one goroutine must be applied in that order, or not at all (an
// error reply); a backend that cannot propose at once (a follower
// forwarding) may finish the Apply inside ApplyAsync. Once ApplyAsync has
// returned it keeps no reference to cmd nor to the bytes its fields
// point to, whatever the outcome: the bridge's pipelined writes reuse one
// Command per connection whose fields alias the request's arguments.
type asyncBackend interface {
	ApplyAsync(ctx context.Context, cmd *fsm.Command) fsm.Future
}

// asyncGrouper is an asyncBackend told which pipelined writes arrived
// together (*cluster.Node): proposed between BeginAsyncGroup and
// EndAsyncGroup, they leave as one log entry or one forwarding call
// rather than the first alone and the rest a round later. A group holds
// back the node's other proposals too: the caller ends it before it
// waits for anything (a reply, input from its client).
type asyncGrouper interface {
	BeginAsyncGroup()
	EndAsyncGroup()
}
