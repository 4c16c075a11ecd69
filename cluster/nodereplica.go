package cluster

import (
	"context"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster/lockservice"
	"github.com/locknode/locknode/fsm"
)

// nodeReplica is a Node as the lock service's replica: the table behind
// raft. Apply, Read, Subscribe and Status are the node's own; the rest
// are here, off the node's API.
type nodeReplica struct{ *Node }

var _ lockservice.Replica = nodeReplica{}

func (r nodeReplica) AwaitWaiter(id string) <-chan lockservice.WaiterEvent {
	return r.hub.AwaitWaiter(id)
}
func (r nodeReplica) StopWaiter(id string)                { r.hub.StopWaiter(id) }
func (r nodeReplica) CommitDemand() (done func())         { return r.hub.CommitDemand() }
func (r nodeReplica) KeyWatches() *lockservice.KeyWatches { return r.hub.KeyWatches() }
func (r nodeReplica) RequestLimits() api.Limits           { return lockservice.LimitsOf(r.limits) }
func (r nodeReplica) NewReqID() string                    { return r.newReqID() }
func (r nodeReplica) Closing() <-chan struct{}            { return r.closed }
func (r nodeReplica) ObserveWait(seconds float64)         { r.metrics.lockWait.Observe(seconds) }
func (r nodeReplica) OpenHandoff(cmd *fsm.Command)        { r.openHandoff(cmd) }
func (r nodeReplica) DeferQueuedAcquire(ctx context.Context, cmd *fsm.Command) {
	r.deferQueuedAcquire(ctx, cmd)
}

var _ api.Locker = (*Node)(nil)
