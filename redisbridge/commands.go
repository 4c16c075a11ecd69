package redisbridge

import "github.com/locknode/locknode/auth"

// command is one entry of the command table.
type command struct {
	name  string // lower case, as Redis names it in error texts
	arity int    // Redis convention: n = exactly n args (name included), -n = at least n; 0 = checked by the FSM
	flags cmdFlags
	acl   accessFn // what a user needs to run it (acl.go)
	fn    func(c *conn, args [][]byte)
}

type cmdFlags uint8

const (
	flagNoAuth cmdFlags = 1 << iota // allowed before AUTH
	flagPubSub                      // allowed in RESP2 subscribe mode
	flagTx                          // runs at once inside MULTI (MULTI, EXEC, DISCARD, WATCH, QUIT, RESET)
	flagQueue                       // queued inside MULTI, run by EXEC's one OpExec; other commands are refused there
)

// dataCommand serves every Redis command the FSM implements
// (fsm.IsKnownCommand) that the table below does not name: reads
// (fsm.IsReadOnly) run in one linearizable Read, writes are one OpRedis
// entry. The FSM checks their arity and options.
var dataCommand = &command{name: "data", flags: flagQueue, acl: dataAccess, fn: cmdData}

// commandTable is the bridge's whole surface, one line per command.
func commandTable() map[string]*command {
	list := []*command{
		// connection and handshake (cmd_conn.go)
		{"ping", -1, flagPubSub | flagQueue, connAccess, cmdPing},
		{"echo", 2, 0, connAccess, cmdEcho},
		{"hello", -1, flagNoAuth, connAccess, cmdHello},
		{"auth", -2, flagNoAuth, connAccess, cmdAuth},
		{"select", 2, 0, connAccess, cmdSelect},
		{"client", -2, 0, clientAccess, cmdClient},
		{"role", 1, 0, need(auth.Read), cmdRole},
		{"info", -1, 0, need(auth.Read), cmdInfo},
		{"config", -2, 0, configAccess, cmdConfig},
		{"cluster", -2, 0, need(auth.Read), cmdCluster},
		{"command", -1, 0, connAccess, cmdCommand},
		{"quit", -1, flagNoAuth | flagPubSub | flagTx, connAccess, cmdQuit},
		{"reset", 1, flagNoAuth | flagPubSub | flagTx, connAccess, cmdReset},
		{"readonly", 1, 0, connAccess, cmdReadonly},
		{"readwrite", 1, 0, connAccess, cmdReadwrite},
		{"asking", 1, 0, connAccess, cmdAsking},
		{"wait", 3, 0, connAccess, cmdWait},
		{"waitaof", 4, 0, connAccess, cmdWaitAOF},
		{"sentinel", -2, 0, need(auth.Read), cmdSentinel},
		{"acl", -2, 0, aclAccess, cmdACL},
		{"slowlog", -2, 0, slowlogAccess, cmdSlowlog},

		// the key space (cmd_keyspace.go)
		{"scan", -2, 0, need(auth.Read), cmdScan},
		{"keys", 2, 0, need(auth.Read), cmdKeys},
		{"dbsize", 1, 0, need(auth.Read), cmdDBSize},

		// scripting (cmd_data.go)
		{"eval", -3, flagQueue, scriptKeys(auth.Write), cmdEval},
		{"evalsha", -3, flagQueue, scriptKeys(auth.Write), cmdEvalSHA},
		{"eval_ro", -3, flagQueue, scriptKeys(auth.Read), cmdEvalRO},
		{"evalsha_ro", -3, flagQueue, scriptKeys(auth.Read), cmdEvalSHARO},
		{"script", -2, 0, scriptAccess, cmdScript},

		// pub/sub (cmd_pubsub.go)
		{"subscribe", -2, flagPubSub, channels(auth.Read, false), cmdSubscribe},
		{"unsubscribe", -1, flagPubSub, connAccess, cmdUnsubscribe},
		{"psubscribe", -2, flagPubSub, channels(auth.Read, true), cmdPSubscribe},
		{"punsubscribe", -1, flagPubSub, connAccess, cmdPUnsubscribe},
		{"publish", 3, flagQueue, publishAccess, cmdPublish},

		// transactions (cmd_tx.go)
		{"watch", -2, flagTx, restKeys(auth.Read), cmdWatch},
		{"unwatch", 1, 0, connAccess, cmdUnwatch},
		{"multi", 1, flagTx, connAccess, cmdMulti},
		{"exec", 1, flagTx, connAccess, cmdExec},
		{"discard", 1, flagTx, connAccess, cmdDiscard},

		// native locks (cmd_lock.go)
		{"lock.acquire", -4, 0, firstKey(auth.Write), cmdLockAcquire},
		{"lock.release", -3, 0, lockReleaseAccess, cmdLockRelease},
		{"lock.extend", -4, 0, firstKey(auth.Write), cmdLockExtend},
		{"lock.info", 2, 0, firstKey(auth.Read), cmdLockInfo},
		{"fence.check", 3, 0, firstKey(auth.Write), cmdFenceCheck},
	}
	list = append(list, nextCommands...)
	m := make(map[string]*command, len(list))
	for _, c := range list {
		m[c.name] = c
	}
	return m
}
