// Package testcluster runs a locknode cluster inside a test, breaks it on
// purpose and checks that the lock service kept its promises. It is for
// locknode's own tests and for users who want to test their code against
// a faulty lock cluster; no production package imports it.
//
// # Cluster
//
// New(t, n, opts) starts n real cluster.Nodes (real FSM, raft and bolt
// storage in t.TempDir) over loopback TCP through a fault-injecting
// network, each serving the HTTP API and the RESP bridge, and tears them
// down with t.Cleanup (Options.Network puts every connection on another
// network instead: package sim's in-memory one, for virtual time). Node
// logs go to t.Log (level: Options.LogLevel or $LOCKNODE_TEST_LOG,
// default warn). Faults:
//
//   - Partition(groups...), Isolate(i), Heal(): cut links; connections
//     across a cut break at once.
//   - SetFaults(Faults{Drop, Delay, Duplicate}): message loss, delay and
//     duplicated raft requests, by rate.
//   - Crash(i) / Restart(i): links cut, then the node stops without a
//     leadership transfer; Restart resumes it from its data directory on
//     the same addresses.
//   - Pause(i) / Resume(i): stop the world — the node's links and clock
//     stop.
//   - SkewClock(i, offset, rate): the node's wall-clock offset and its
//     clock's rate (cluster.Config.Clock); the nemesis's wall-clock jump steps its
//     wall clock, leaving the monotonic one as it was; JumpClock(i, d)
//     breaks its monotonic clock.
//
// WaitLeader, Leader, WaitApplied and Snapshot observe it.
//
// # Histories and checkers
//
// Clients (NativeClient, HTTPClient, RESPClient, RawHTTPClient — net/http
// and JSON, no Go client — and ScriptClient — Redlock-style SET NX and
// EVALSHA scripts) record every operation
// with invoke and return times and its result in a History. Checkers:
//
//  1. CheckLinearizable: porcupine, with a model of the lock semantics
//     (acquire, try, release, extend, get, with fences and leases),
//     partitioned per key; on a violation the visualisation is written
//     to a file named in the error.
//  2. CheckFencing: a protected Resource that takes writes only with a
//     token at least the highest seen; no stale write is accepted and no
//     write inside its writer's lease is refused.
//  3. CheckDurable: every acknowledged grant and release is reflected in
//     the final state.
//  4. CheckFences: fences strictly increase over grants.
//  5. CheckConverged: every node's FSM snapshot is byte-identical at the
//     same index.
//  6. CheckLeases: no hold ends (seen from a neutral real clock) before
//     its request's send time plus its TTL.
//  7. CheckGrantOrder, CheckGrantsOutliveEntry and CheckPermits, on
//     what a node applied rather than on a History (RecordApplied,
//     Cluster.RecordApplied): waiters of a key are granted in the order
//     they were queued, no waiter's hold ends in the entry that granted
//     it, and no semaphore has more holders than permits at any index
//     read.
//
// # What clients believed
//
// Surfaces (Cluster.NewSurfaces) drives what users touch: Go Lock
// handles with renewal, campaigners with sessions watching
// Leadership.Done, `locknode lock` children (BuildLocknode), holds that
// nobody renews, and a resource behind the fence middleware with the
// cluster's fence registry. It records Beliefs on the History's clock —
// a handle from its grant answer until its Context is done, a leadership
// from Elect's return until Done, a child from its first to its last
// write that reached the resource — and Surfaces.Check runs:
//
//  7. CheckHandles: no more live handles for a key than its mode allows,
//     fences increasing from one to the next.
//  8. CheckLeaders: at most one campaigner believes it leads at any
//     instant.
//  9. CheckAccepted: the fenced resource accepted tokens only in
//     increasing order.
//  10. CheckHoldEnds: no hold was still seen held later than its TTL
//     plus a slack (one tick, one election), stretched by the slowest
//     clock, after its last grant or extend (judged by when the last
//     read that found it held was sent, not by when a read that waited
//     out an outage came back).
//  11. CheckLeftovers: once every client stopped, no hold outlived its
//     TTL and no waiter stayed queued for nobody.
//
// # Nemesis
//
// NewSchedule(seed, ...) generates a reproducible schedule of faults
// (partitions, crashes and restarts, leader kills, pauses, clock skew,
// message loss, and disk faults on one node's raft log: ENOSPC, EIO on
// write or fsync, a write torn by a crash); RunSchedule plays it against
// a Cluster while a workload runs. The seed is logged: re-running with it
// replays the schedule. FailDisk, TearDisk and HealDisk apply the disk
// faults directly (through cluster.Config.StorageFaults).
//
// ProcCluster does the same with real `locknode serve` processes (kill -9,
// SIGSTOP/SIGCONT, restart), checked through the HTTP client.
//
// # Your responsibilities
//
//  1. Give every acquire a unique owner token: the checkers identify
//     holds by owner.
//  2. Run checkers after the workload has stopped and the cluster healed.
//  3. Call methods that may t.Fatal (Leader, Restart) from the test's
//     goroutine only; elsewhere use WaitLeader and RestartErr.
package testcluster
