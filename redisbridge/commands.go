package redisbridge

// command is one entry of the command table.
type command struct {
	name  string // lower case, as Redis names it in error texts
	arity int    // Redis convention: n = exactly n args (name included), -n = at least n; 0 = checked by the FSM
	flags cmdFlags
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
var dataCommand = &command{name: "data", flags: flagQueue, fn: cmdData}

// commandTable is the bridge's whole surface, one line per command.
func commandTable() map[string]*command {
	list := []*command{
		// connection and handshake (cmd_conn.go)
		{"ping", -1, flagPubSub | flagQueue, cmdPing},
		{"echo", 2, 0, cmdEcho},
		{"hello", -1, flagNoAuth, cmdHello},
		{"auth", -2, flagNoAuth, cmdAuth},
		{"select", 2, 0, cmdSelect},
		{"client", -2, 0, cmdClient},
		{"info", -1, 0, cmdInfo},
		{"config", -2, 0, cmdConfig},
		{"cluster", -2, 0, cmdCluster},
		{"command", -1, 0, cmdCommand},
		{"quit", -1, flagNoAuth | flagPubSub | flagTx, cmdQuit},
		{"reset", 1, flagNoAuth | flagPubSub | flagTx, cmdReset},
		{"readonly", 1, 0, cmdOK},
		{"readwrite", 1, 0, cmdOK},
		{"wait", 3, 0, cmdWait},
		{"waitaof", 4, 0, cmdWaitAOF},
		{"sentinel", -2, 0, cmdSentinel},

		// scripting (cmd_data.go)
		{"eval", -3, flagQueue, cmdEval},
		{"evalsha", -3, flagQueue, cmdEvalSHA},
		{"eval_ro", -3, flagQueue, cmdEvalRO},
		{"evalsha_ro", -3, flagQueue, cmdEvalSHARO},
		{"script", -2, 0, cmdScript},

		// pub/sub (cmd_pubsub.go)
		{"subscribe", -2, flagPubSub, cmdSubscribe},
		{"unsubscribe", -1, flagPubSub, cmdUnsubscribe},
		{"psubscribe", -2, flagPubSub, cmdPSubscribe},
		{"punsubscribe", -1, flagPubSub, cmdPUnsubscribe},
		{"publish", 3, flagQueue, cmdPublish},

		// transactions (cmd_tx.go)
		{"watch", -2, flagTx, cmdWatch},
		{"unwatch", 1, 0, cmdUnwatch},
		{"multi", 1, flagTx, cmdMulti},
		{"exec", 1, flagTx, cmdExec},
		{"discard", 1, flagTx, cmdDiscard},

		// native locks (cmd_lock.go)
		{"lock.acquire", -4, 0, cmdLockAcquire},
		{"lock.release", -3, 0, cmdLockRelease},
		{"lock.extend", -4, 0, cmdLockExtend},
		{"lock.info", 2, 0, cmdLockInfo},
		{"fence.check", 3, 0, cmdFenceCheck},
	}
	m := make(map[string]*command, len(list))
	for _, c := range list {
		m[c.name] = c
	}
	return m
}
