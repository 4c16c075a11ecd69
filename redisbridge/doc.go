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
// handler, admitted once (admit.go) by its entry in the command catalogue
// (package fsm/rediscmd: arity, flags, key positions, permission), that
// parses its options into a local struct,
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
//  3. For Redis Cluster clients, set Config.Cluster and fill
//     Config.Members (every member's id, RESP and raft address, and
//     whether it answers): CLUSTER SLOTS/SHARDS/NODES then show one shard
//     mastered by the raft leader, followers answer MOVED for keyed
//     commands, and keys across slots answer CROSSSLOT (cmd_cluster.go).
//  4. Call Close on shutdown: it stops accepting, closes idle connections,
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
// The operators' commands walk the key space (cmd_keyspace.go): KEYS,
// DBSIZE, INFO keyspace and the first call of a SCAN iteration, whose
// later calls read a per-node snapshot of sorted names (scan_cache.go);
// each lists only the keys the caller's key patterns allow. SLOWLOG
// (slowlog.go) keeps this node's slow commands in memory.
//
// Every connection is bounded (Config): MaxConns clients (Redis'
// maxclients), argument and command sizes (proto-max-bulk-len, multibulk
// length), an optional IdleTimeout (Redis' timeout), and the pub/sub
// output limits: pub/sub messages are queued per subscriber on the apply
// path without waiting, and a subscriber whose pending output passes
// PubSubHardLimit (or stays over PubSubSoftLimit for PubSubSoftFor) is
// disconnected. A connection's argument buffers are dropped before it
// waits for its next command if a large command grew them; CLIENT INFO
// shows them (argv-mem) and the pending output (oll, omem).
//
// Client-side caching (CLIENT TRACKING, tracking.go) keeps, per node, the
// keys its tracking connections read (at most TrackingTableMaxKeys) and
// their BCAST prefixes. Invalidations come from the applied entries'
// events (fsm.EvChanged, fsm.EvValueChanged; fsm.EvRestored after a
// snapshot install flushes everything), so a write through any node, an
// expiry, or a native lock operation invalidates on every node. They are
// queued like pub/sub messages and count towards the same output limits.
//
// Keyspace notifications (notify.go) come the same way, from the applied
// entries' fsm.EvKeyspace events: each node publishes those its
// notify-keyspace-events selects to its own subscribers, through the
// pub/sub hub, so a subscriber on any node sees every change.
//
// Choices that differ from a single Redis server, all deliberate:
//
//   - Every node accepts every command; writes are forwarded to the leader
//     by the Backend. HELLO and INFO always report role master.
//   - When no leader is reachable a command fails with "TRYAGAIN ..." (go-
//     redis and others retry on that prefix); it never answers from stale
//     state.
//   - The script cache is replicated, with Redis 7.4's rules (fsm
//     script_cache.go): SCRIPT LOAD (fsm.OpScriptLoad) keeps a script until
//     SCRIPT FLUSH, on every node and across leader changes and restarts
//     (redis-py and Redisson load once, then only send EVALSHA); EVAL
//     caches its script too, the least recently used evicted past a bound,
//     so EVAL traffic never fills the cache. EVALSHA is one entry carrying
//     the SHA1 (fsm.OpEvalSHA): the FSM runs what its cache holds at that
//     index or answers NOSCRIPT. SCRIPT FLUSH is an entry too
//     (fsm.OpScriptFlush), so it empties every node's cache.
//   - EVAL_RO and EVALSHA_RO run through the log like EVAL, marked
//     read-only: a write command from the script fails with Redis' error
//     and changes nothing. They are not served by Read: Read holds the
//     table for reading only, while a script run uses the Lua engine's
//     caches and interpreters, which the apply path owns.
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
//     A block holds at most fsm.Config's MaxExecCommands commands and
//     MaxExecBytes argument bytes: the command past either is refused, the
//     queue dropped, and EXEC answers EXECABORT.
//   - With Config.Users, each command is checked once against what its
//     catalogue entry needs (acl.go): a category and the keys and
//     channels it names, with Redis 7's NOAUTH, WRONGPASS and NOPERM
//     texts. Writes of a user without admin carry fsm.Command.NoForce (the
//     FSM refuses to end or change a live lock without its token), and
//     those of a user limited to key patterns fsm.Command.KeysOnly (a
//     script touches only its declared KEYS). A file without a "default"
//     user leaves none (Redis would create an open one).
package redisbridge
