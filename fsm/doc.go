// Package fsm is locknode's replicated state machine: one key space that
// holds native locks (mutexes, reader-writer locks, semaphores with
// holders, FIFO waiters and fences) and the Redis values lock scripts use.
// It is pure: no I/O, clocks, goroutines, randomness or map order in its
// output. The same sequence of (index, command) gives the same results and
// byte-identical snapshots on every node.
//
// # Using a Table
//
// A Table is a plain synchronous type. Build commands, encode them with
// Command.MarshalBinary, replicate them, and apply them on every node:
//
//	tab := fsm.New(cfg)
//	res := tab.Apply(index, &fsm.Command{Op: fsm.OpAcquire, Time: now,
//		Key: "orders", Owner: token, TTL: 10_000})
//	if res.Err == nil && res.Granted { /* res.Fence is the fencing token */ }
//
// Your responsibilities, as the layer around the table (cluster.Node):
//
//  1. Stamp every command's Time by the rule below (never a wall clock read
//     on the applying node).
//  2. Apply entries in log order, each exactly once, with its raft index
//     (Apply or ApplyBytes). The index becomes the fence of every grant the
//     entry makes, so it must be the entry's real log index.
//  3. Propose an OpTick when NextDeadline has passed and nothing else is
//     being proposed, so leases, waits, sessions and lock-delays end and
//     waiters are handed locks without client traffic. A stale hint costs
//     one harmless Tick.
//  4. Serialise Apply, Snapshot and the read-only queries (Inspect, List,
//     Stats, Session, Waiter, HoldOf) under one mutex; Snapshot reads the
//     live table, so take it under the same mutex as Apply (or on a
//     quiesced table).
//  5. Give every node the same Config: limits are part of the determinism
//     contract (a command refused on one node must be refused everywhere).
//  6. Deliver Result.Events: EvGranted and EvWaitEnded complete the
//     requests blocked on a waiter (by WaiterID = the acquire's ReqID) on
//     the node that holds them; EvReleased/EvChanged feed watchers and the
//     Redis mirror; EvKeyspace are Redis keyspace notifications (notify.go)
//     for the RESP bridge. Events are never replayed by the exactly-once
//     cache.
//  7. Only after the entry is committed and applied tell a client
//     "granted", "released" or "extended".
//  8. Stop applying when Halted is set (an entry or snapshot of a cluster
//     version above MaxClusterVersion: a *VersionError), never skip the
//     entry, and write no snapshot past it; propose an op only once
//     OpVersion(op) <= Version() (version.go).
//
// # Time
//
// The FSM has its own clock, now, carried in the log. Each command holds
// the proposing leader's reading. Rule: when a node becomes leader it reads
// its monotonic clock m0 and the FSM's last applied time t0 (Table.Now);
// every command it proposes carries t0 + (monotonic() - m0). The FSM sets
// now = max(now, command time). Wall-clock differences between nodes
// therefore never matter; only the rate of each leader's monotonic clock
// does. The leader proposes a small Tick when a hold or waiter is due and
// nothing else is happening, so expiries and hand-offs happen within about
// one tick interval (default 100 ms) of their deadline.
//
// Everything that falls due is handled at the start of the next Apply, in
// (time, kind, id) order, each item as of its own due time: a lease that
// ended at 100 is released before a waiter whose wait ended at 150 is
// dropped, even when both are found by one entry at 200.
// From cluster version VersionBoundedExpiry on, an entry stops after
// DueEventBudget events of due work; the rest is handled by the next
// entries (the leader proposes Ticks at once while NextDeadline <= Now),
// and a command applied meanwhile first does the due work of the keys,
// session and request id it touches (expiry_bound.go).
//
// # Locks
//
// Exclusive locks have one holder; Shared holders coexist with each other
// only; a Semaphore of Permits N (fixed by the first acquirer while the
// lock exists, ErrPermits otherwise) has at most N holders. A grant needs
// the key compatible and its queue empty, so a queued writer stops new
// readers. A blocking acquire (Wait > 0, ReqID required) queues a waiter;
// whenever a key frees or shrinks its queue is granted from the head, as
// many as fit, stopping at the first that does not. A multi-lock (Keys)
// is all-or-nothing and queues one waiter in every key's queue in one
// entry, so queues agree on order and cannot deadlock.
//
// Fences: a grant's fence is the index of the entry that granted it (also
// for hand-offs made while applying another entry); reentry and idempotent
// re-acquires keep it. The table keeps the highest fence ever granted; the
// fence registry (OpFenceCheck) refuses a token above it (ErrBadCommand).
//
// Same owner again: with Reentrant the count goes up (and the lease is
// renewed to at least now+TTL; at most 2^31-1, beyond which ErrLimit); without it the acquire succeeds idempotently,
// returning the existing hold with its fence and deadline unchanged (a
// retried Redis SET NX must succeed, but must not prolong a lease). A
// request in another mode than the owner's hold is refused (no upgrades).
//
// Leases: every hold not bound to a session needs MinTTL <= TTL <= MaxTTL;
// a wait, lock-delay or MaxHold over MaxTTL, or permits over MaxPermits,
// are refused. Redis commands that would give a lock a lease over MaxTTL
// (SET NX PX, SET IFEQ, the EXPIRE family) answer an error: nothing is
// clamped.
// Extend resets the deadline to now+TTL (the command's, or the hold's own)
// clamped to the hold's HardLimit (grant time + MaxHold); a hold already at
// its HardLimit is refused with ErrMaxHold.
//
// Sessions: a hold bound to a session has no lease of its own; it lives
// as long as the session (and never past its MaxHold), and its reported
// Deadline is the session's. Extending such a hold keeps the session
// alive. Closing a session releases its holds cleanly (no lock-delay) and
// ends its waiters with ErrCancelled; a session that expires loses its
// holds (ReasonSession, lock-delay applies) and ends its waiters with
// ErrSessionUnknown.
//
// Lock-delay: when a hold with LockDelay ends by expiry or session loss
// (never by release or close) the key refuses grants until end+LockDelay;
// try-acquires get ErrLockDelay and waiters keep waiting.
//
// Redis values: an acquire on a key holding another kind of value is
// refused with ErrLocked, or waits until that key is deleted or expires.
//
// # Exactly once
//
// Acquire, Release, Extend, SessionOpen, SessionKeepAlive, SessionClose
// and FenceCheck commands carrying a ReqID are applied once; a repeat gets
// the first result (without events) and changes nothing; refusals are not
// remembered (a retry is evaluated again). A repeated
// blocking acquire is answered from its waiter: Queued while it waits, the
// grant once granted, ErrCancelled once cancelled; a waiter that timed out
// forgets its id, so a client may re-issue the same id to wait again.
// CancelWait is answered from state. Tick, Redis, Eval, EvalSHA, Exec,
// ScriptLoad and ScriptFlush are not remembered. Ids are forgotten ReqIDWindow ms of FSM
// time after they were applied, or sooner, oldest first, when more than
// MaxReqIDs are remembered.
//
// # Memory
//
// A held exclusive lock with a lease costs about 210 bytes of live heap
// at a million locks: its slot in the key map (~48), one 96-byte Value
// holding the lock and its first hold (with its grant and renewal times)
// inline, the key and owner strings (one allocation when the lock came
// from SET NX or a snapshot), a 24-byte due-heap item; a remembered
// request id about 150 more (BenchmarkHeldLocksNative,
// BenchmarkHeldLocksRedis, bench/cmd/fsmheap). Options most holds leave
// unset (session, lock-delay, max hold, metadata), more holders, a
// semaphore's size and the bodies of Redis values sit behind pointers,
// allocated only when used. Stats is O(1): the table counts
// locks and holds as they change.
//
// MemoryUsed is an accounted size of the whole state (keys, values,
// holds, waiters, sessions, fences, tombstones, request ids), computed
// from the state alone so every node agrees, kept as it changes and
// recounted on Restore. Past Config.MaxMemory, commands that would grow
// it are refused with ErrOutOfMemory (Redis commands and scripts: the
// OOMText error reply) and change nothing; releases, deletes, expiries
// and extends still run (memory.go).
//
// # Snapshots
//
// Snapshot writes the complete state in a versioned binary format with
// every map in key order; Restore rebuilds the derived indexes and the due
// heap. Equal tables give equal bytes. The same bytes can be made in two
// steps, so that the caller's lock is held only for the first:
// SnapshotUnordered writes the key records in map order (and their
// offsets to a second writer); the UnorderedSnapshot it returns then sorts
// them by key and writes the snapshot (WriteOrdered, WriteOrderedAt, or
// WriteOrderedDropping for files the caller mapped, holding only a few
// MiB of them in memory at a time), reading only what the first step
// wrote.
package fsm
