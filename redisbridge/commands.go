package redisbridge

import (
	"fmt"

	"github.com/locknode/locknode/fsm/rediscmd"
)

// command is one entry of the command table: how the bridge serves a
// command. What the command is — arity, flags, key and channel positions,
// the permission it needs — is its entry in the command catalogue
// (package rediscmd), kept once for the key space and the bridge.
type command struct {
	name  string // lower case, as Redis names it in error texts
	flags cmdFlags
	// acl refines the catalogue's permission by subcommand (CONFIG SET
	// is admin): nil when the catalogue's says it all (acl.go).
	acl  accessFn
	fn   func(c *conn, args [][]byte)
	spec *rediscmd.Spec // the catalogue's entry; set by commandTable
}

type cmdFlags uint8

const (
	flagPubSub cmdFlags = 1 << iota // allowed in RESP2 subscribe mode
	flagTx                          // runs at once inside MULTI (MULTI, EXEC, DISCARD, WATCH, QUIT, RESET)
	flagQueue                       // queued inside MULTI, run by EXEC's one OpExec; other commands are refused there
	flagData                        // a command of the key space without a handler here (cmdData)
)

// commandTable is the bridge's whole surface, one line per command it
// handles itself; every other command of the key space (catalogue flag
// KeySpace) is served by cmdData: reads in one linearizable Read, writes
// as one OpRedis entry.
func commandTable() map[string]*command {
	list := []*command{
		// connection and handshake (cmd_conn.go)
		{"ping", flagPubSub | flagQueue, nil, cmdPing, nil},
		{"echo", 0, nil, cmdEcho, nil},
		{"hello", 0, nil, cmdHello, nil},
		{"auth", 0, nil, cmdAuth, nil},
		{"select", 0, nil, cmdSelect, nil},
		{"client", 0, clientAccess, cmdClient, nil},
		{"role", 0, nil, cmdRole, nil},
		{"info", 0, nil, cmdInfo, nil},
		{"config", 0, configAccess, cmdConfig, nil},
		{"cluster", 0, nil, cmdCluster, nil},
		{"command", 0, nil, cmdCommand, nil},
		{"quit", flagPubSub | flagTx, nil, cmdQuit, nil},
		{"reset", flagPubSub | flagTx, nil, cmdReset, nil},
		{"readonly", 0, nil, cmdReadonly, nil},
		{"readwrite", 0, nil, cmdReadwrite, nil},
		{"asking", 0, nil, cmdAsking, nil},
		{"wait", 0, nil, cmdWait, nil},
		{"waitaof", 0, nil, cmdWaitAOF, nil},
		{"sentinel", 0, nil, cmdSentinel, nil},
		{"acl", 0, aclAccess, cmdACL, nil},
		{"slowlog", 0, slowlogAccess, cmdSlowlog, nil},

		// the key space (cmd_keyspace.go)
		{"scan", 0, nil, cmdScan, nil},
		{"keys", 0, nil, cmdKeys, nil},
		{"dbsize", 0, nil, cmdDBSize, nil},

		// scripting (cmd_data.go)
		{"eval", flagQueue, nil, cmdEval, nil},
		{"evalsha", flagQueue, nil, cmdEvalSHA, nil},
		{"eval_ro", flagQueue, nil, cmdEvalRO, nil},
		{"evalsha_ro", flagQueue, nil, cmdEvalSHARO, nil},
		{"script", 0, scriptAccess, cmdScript, nil},

		// pub/sub (cmd_pubsub.go)
		{"subscribe", flagPubSub, nil, cmdSubscribe, nil},
		{"unsubscribe", flagPubSub, nil, cmdUnsubscribe, nil},
		{"psubscribe", flagPubSub, nil, cmdPSubscribe, nil},
		{"punsubscribe", flagPubSub, nil, cmdPUnsubscribe, nil},
		{"publish", flagQueue, nil, cmdPublish, nil},

		// transactions (cmd_tx.go)
		{"watch", flagTx, nil, cmdWatch, nil},
		{"unwatch", 0, nil, cmdUnwatch, nil},
		{"multi", flagTx, nil, cmdMulti, nil},
		{"exec", flagTx, nil, cmdExec, nil},
		{"discard", flagTx, nil, cmdDiscard, nil},

		// native locks (cmd_lock.go)
		{"lock.acquire", 0, nil, cmdLockAcquire, nil},
		{"lock.release", 0, lockReleaseAccess, cmdLockRelease, nil},
		{"lock.extend", 0, nil, cmdLockExtend, nil},
		{"lock.info", 0, nil, cmdLockInfo, nil},
		{"fence.check", 0, nil, cmdFenceCheck, nil},
	}
	list = append(list, nextCommands...)
	m := make(map[string]*command, len(list))
	for _, c := range list {
		c.spec = rediscmd.Lookup(c.name)
		if c.spec == nil {
			// A programming error every test meets at once.
			panic(fmt.Sprintf("redisbridge: command %q has no catalogue entry", c.name))
		}
		m[c.name] = c
	}
	for _, s := range rediscmd.All() {
		if _, own := m[s.Name]; !own && s.Flags&rediscmd.KeySpace != 0 {
			m[s.Name] = &command{name: s.Name, flags: flagQueue | flagData, fn: cmdData, spec: s}
		}
	}
	return m
}
