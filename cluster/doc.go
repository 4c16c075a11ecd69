// Package cluster runs a locknode node: a hashicorp/raft server whose
// replicated state machine is an fsm.Table, with the node-side logic the
// FSM must not have (clocks, goroutines, networking).
//
// Start a node with Start(ctx, cfg) and stop it with Close. A *Node
// implements api.Locker (the typed lock API) and the RESP bridge's
// Backend (Apply, Read, Subscribe, WaitCommitted).
//
// The node is two layers. Its replica is raft, the table and its lock,
// the applied index, the subscribers and the registry of local waiters:
// Apply, Read, Subscribe and a waiter's outcome; the node composes it
// from parts that own their state (raftReplica, forwarder, leaderTerm,
// roster: docs/DESIGN.md "The node's parts"). The lock service
// (cluster/lockservice) is the lock API written once over a replica: it
// validates a request, builds the FSM command, proposes it and maps the
// result. *Node embeds its lock service, so its lock methods are the
// service's.
//
// NewLocal runs the same lock service over one in-process table (Local,
// lockservice.Local): a mutex in place of raft, commands stamped with
// LocalConfig.Clock, a loop doing the leader's tick work, nothing on
// disk. It serves tests (httpapitest.Fake and the bridge's test backend
// are built on it) and single-process use that needs no durability;
// lockservice links no raft.
//
// What the node is responsible for:
//
//  1. Storage: the raft log in DataDir/wal (hashicorp/raft-wal, one
//     fsync per appended batch; Config.LogStore, logstore.go), the stable
//     store in DataDir/raft.db (bbolt), snapshots in DataDir/snapshots.
//     Restarting on the same DataDir resumes every lock, session and
//     waiter.
//  2. Any node accepts any request. A follower forwards commands and read
//     indexes to the leader over the transport and, before answering,
//     waits until it applied the entry itself, so its local waiters and
//     reads see it. Concurrent and pipelined commands share forwarding
//     calls, in order (forward_batch.go); the leader tells followers of
//     each commit at once, so that wait is one round trip.
//  3. Time. The leader stamps every command with the cluster clock:
//     when it takes office it waits for a raft barrier, then reads its
//     monotonic clock m0, takes as t0 the larger of the table's time and
//     its own bound of the cluster clock (clockFloor: the latest applied
//     entry's time plus what this node saw pass since it stored it), and stamps
//     t0 + (monotonic - m0) (docs/DESIGN.md "Time"). It proposes a Tick
//     when something in the table falls due (Config.TickInterval) and
//     when the log's time lags its clock by Config.ClockSyncInterval.
//  4. Group commit: raft's BatchApplyCh and MaxAppendEntries batch
//     concurrent proposals into shared log writes and fsyncs, and the
//     table applies committed entries in batches (raft.BatchingFSM).
//  5. Waiting without polling: a blocking acquire registers a local
//     channel under its waiter id before proposing, and is completed when
//     this node applies the grant (or the end of the wait) at an index
//     after the entry that queued it: a retried acquire may queue its id
//     again after the first wait ended, and that end is not its answer.
//  6. Failures are reported fast: a lost leader or dropped connection
//     fails a request at once; only requests that are safe to repeat
//     (carrying a request id, or never delivered) are retried when a new
//     leader is known, until the caller's ctx ends (RetryTimeout when it
//     has no deadline), so a request rides out an election. Errors wrap
//     api.ErrNoLeader when no leader is reachable.
//  7. Linearizable reads: Read asks the leader for a read index after it
//     confirmed its leadership with a quorum, waits until the local table
//     reached it, and evaluates deadlines with the leader's clock, but
//     never at or past a scheduled deadline that no committed entry has
//     reached (lockservice.ReadTime): a new leader continues from its bound of the
//     cluster clock (the log's time plus what it has seen pass since),
//     not from the old leader's clock, so a read must not call a lease
//     ended that later writes find alive.
//  8. Peers. With Config.PeerServerTLS and PeerClientTLS (mutual TLS on
//     the peer port), a peer is the node its certificate's Common Name
//     names; forwarded commands, read indexes and membership changes are
//     served only for current members, and a join also for the node it
//     adds (peerauth.go). Without them the port trusts whoever reaches it.
//
// Elections are locks: election E is the exclusive lock "election/E"
// (ElectionPrefix), owned by the leader's value and bound to its session.
//
// Members learn each other's client addresses (Config.Advertised: HTTP,
// RESP) with PeerAddrs, a cached node-info RPC to every member; the RESP
// bridge uses it for Sentinel discovery and INFO (see nodeinfo.go).
//
// Metrics are on a per-node Prometheus registry (Node.Metrics).
//
// For the dashboard, each node also keeps, in memory and bounded, every
// lock's recent grants and how each ended (Node.History, history.go) and
// per-second counts of what it applied (Node.Activity, activity.go), both
// fed from the entries it applies; neither is replicated state.
package cluster
