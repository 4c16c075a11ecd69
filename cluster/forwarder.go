package cluster

// forwarder is the node's way to the leader: it sends a follower's
// commands and read-index requests to the leader (forward, withLeader,
// with retries across elections; Read, a linearizable read), queues and
// batches the asynchronous and pipelined commands (forward_batch.go,
// apply_async.go), answers the forwarded calls as leader (rpc.go), and
// hands the commit hints that come back to raft, so a follower applies
// its own commands without waiting for the next AppendEntries.
//
// A part of Node (see raftReplica): its state is the forwarding queue,
// the asynchronous window and the forced releases a forwarded command's
// result is completed with.
type forwarder struct {
	*Node

	// forced remembers the forced releases of recent entries, which a
	// forwarded command's result gets from here (peeraudit.go).
	forced forcedLog

	// asyncWindow is a semaphore of maxAsyncInFlight slots bounding the
	// asynchronous proposals not yet answered (apply_async.go).
	asyncWindow chan struct{}
	// fwd is a follower's asynchronous proposals on their way to the
	// leader (forward_batch.go).
	fwd forwardQueue
}

func newForwarder(n *Node) *forwarder {
	return &forwarder{Node: n, asyncWindow: make(chan struct{}, maxAsyncInFlight)}
}
