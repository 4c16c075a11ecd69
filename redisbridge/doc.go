// Package redisbridge serves the Redis protocol (RESP2 and RESP3) on top of
// a locknode node, so existing Redis lock clients (redsync, redislock,
// redis-py's Lock, Redisson's scripts, ...) work unmodified against the
// replicated key space.
//
// Usage:
//
//	srv, err := redisbridge.New(node, redisbridge.Config{Addr: "127.0.0.1:6379"})
//	ln, err := net.Listen("tcp", srv.Config().Addr)
//	go srv.Serve(ln) // returns when Close is called
//	defer srv.Close()
//
// The bridge is a command table (commands.go): every command is one
// handler that checks arity once, parses its options into a local struct,
// then either proposes ONE FSM command through Backend.Apply or runs ONE
// read through Backend.Read, and replies. It never reads and then writes
// (no check-then-act): conditional writes (SET NX, compare-and-delete
// scripts, EXEC after WATCH) are decided inside the FSM, atomically.
//
// Your responsibilities as the embedder:
//
//  1. Give it a Backend (a *cluster.Node) whose Apply is linearizable and
//     whose Read confirms leadership (ReadIndex) unless stale is asked.
//  2. Fill Config.Peers with the RESP addresses of live members so that
//     SENTINEL and INFO describe the cluster; Sentinel-aware clients then
//     fail over between nodes with standard configuration.
//  3. Call Close on shutdown: it stops accepting, closes idle connections,
//     cancels blocking waits (LOCK.ACQUIRE ... WAIT, WAIT) and lets other
//     in-flight commands finish and reply.
//
// Beyond Redis' own commands (the FSM's key space, scripting, pub/sub,
// transactions, the handshake and SENTINEL) the bridge serves the native
// lock API (cmd_lock.go): LOCK.ACQUIRE (fencing token, FIFO waiting
// without polling, shared and semaphore modes, reentrancy, sessions),
// LOCK.RELEASE, LOCK.EXTEND, LOCK.INFO and FENCE.CHECK. A client that
// hangs up while blocked in LOCK.ACQUIRE ... WAIT leaves the queue through
// the log, so the lock is never handed to a connection that is gone.
//
// Choices that differ from a single Redis server, all deliberate:
//
//   - Every node accepts every command; writes are forwarded to the leader
//     by the Backend. HELLO and INFO always report role master.
//   - When no leader is reachable a command fails with "TRYAGAIN ..." (go-
//     redis and others retry on that prefix); it never answers from stale
//     state.
//   - SCRIPT LOAD proposes fsm.OpScriptLoad, so the script cache is
//     replicated: a script loaded through one node runs by EVALSHA on every
//     node, and survives leader changes (redis-py and Redisson load once,
//     then only send EVALSHA). Scripts run by EVAL are also remembered in a
//     per-node cache; on a miss there, EVALSHA looks the script up in the
//     replicated cache with a linearizable read. SCRIPT FLUSH clears only
//     the per-node cache: the replicated one is bounded by the FSM, and
//     flushing it would take a log entry for no effect a client relies on.
//   - EVAL_RO and EVALSHA_RO run through the log like EVAL (a script's
//     read-only-ness is not known before it runs, and running it in Read
//     could not refuse a write deterministically).
//   - PUBLISH is a log entry; messages are delivered when this node applies
//     it, to this node's subscribers. Its reply counts the local
//     subscribers that match the channel (Redis counts every receiver).
//   - WAIT replies the number of other members once the connection's last
//     write is committed: a committed entry is on a quorum and will reach
//     every live member. WAITAOF replies [1, that number].
//   - Inside MULTI only commands that can run in the one OpExec entry are
//     queued (the FSM's Redis commands, PING, PUBLISH, EVAL and EVALSHA
//     — the latter resolved from the replicated script cache at EXEC);
//     others (LOCK.*, INFO, ...) are refused and abort the transaction.
//   - With Config.Users, each command is checked once against what its
//     command-table entry needs (acl.go): a category and the keys and
//     channels it names, with Redis 7's NOAUTH, WRONGPASS and NOPERM
//     texts. Writes of a user without admin carry fsm.Command.NoForce (the
//     FSM refuses to end or change a live lock without its token), and
//     those of a user limited to key patterns fsm.Command.KeysOnly (a
//     script touches only its declared KEYS). A file without a "default"
//     user leaves none (Redis would create an open one).
package redisbridge
