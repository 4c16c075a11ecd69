package redisbridge

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/redisbridge/resp"
)

// cmdData serves a Redis command of the FSM: a read-only one in one
// linearizable Read, any other as one OpRedis entry. The FSM decides
// arity, options and outcome (SET NX, compare-and-delete, ...), so the
// bridge never reads before it writes.
func cmdData(c *conn, args [][]byte) {
	if fsm.IsReadOnly(args[0]) {
		c.readRedis(args)
		return
	}
	c.applyRedis(args)
}

// EVAL script numkeys [key ...] [arg ...] (and EVAL_RO): one OpEval
// entry; the script runs inside Apply on every node.
func cmdEval(c *conn, args [][]byte) {
	keys, argv, ok := c.scriptArgs(args)
	if !ok {
		return
	}
	c.s.scripts.put(fsm.ScriptSHA(args[1]), args[1])
	c.eval(bytes.Clone(args[1]), keys, argv)
}

// EVALSHA sha1 numkeys [key ...] [arg ...] (and EVALSHA_RO): the script
// text comes from this node's cache, else from the replicated one in a
// linearizable read, so a SCRIPT LOAD acknowledged by any node is seen
// (scripts never change under their SHA1, so later hits need no read).
func cmdEvalSHA(c *conn, args [][]byte) {
	keys, argv, ok := c.scriptArgs(args)
	if !ok {
		return
	}
	sha := lowerSHA(args[1])
	script, found := c.s.scripts.get(sha)
	if !found && len(sha) == 40 {
		ctx, cancel := c.ctx()
		err := c.s.b.Read(ctx, false, func(t *fsm.Table, _ int64) {
			var s []byte
			if s, found = t.ScriptBySHA(sha); found {
				script = append([]byte(nil), s...)
			}
		})
		cancel()
		if err != nil {
			c.writeErr(err)
			return
		}
		if found {
			c.s.scripts.put(sha, script)
		}
	}
	if !found {
		c.w.WriteError(msgNoScript)
		return
	}
	c.eval(script, keys, argv) // script: the cache's copy, or read's
}

// scriptArgs splits EVAL's arguments into KEYS and ARGV, or writes the
// error.
func (c *conn) scriptArgs(args [][]byte) (keys, argv [][]byte, ok bool) {
	keys, argv, msg := parseScriptArgs(args)
	if msg != "" {
		c.w.WriteError(msg)
		return nil, nil, false
	}
	return keys, argv, true
}

// parseScriptArgs splits EVAL's arguments (copied) into KEYS and ARGV, or
// returns the error reply's text.
func parseScriptArgs(args [][]byte) (keys, argv [][]byte, msg string) {
	n, err := strconv.ParseInt(string(args[2]), 10, 64)
	switch {
	case err != nil:
		return nil, nil, msgNumKeysNotInt
	case n < 0:
		return nil, nil, msgNumKeysNeg
	case n > int64(len(args)-3):
		return nil, nil, msgNumKeysBig
	}
	rest := resp.CloneArgs(args[3:])
	return rest[:n:n], rest[n:], ""
}

func (c *conn) eval(script []byte, keys, argv [][]byte) {
	if r, ok := c.apply(evalCommand(script, keys, argv)); ok {
		c.w.WriteReply(r.Reply)
	}
}

// evalCommand is EVAL's log entry. script must be the caller's to give
// away: a copy, or the script cache's (never modified).
func evalCommand(script []byte, keys, argv [][]byte) *fsm.Command {
	return &fsm.Command{Op: fsm.OpEval, Script: script, KeysB: keys, Args: argv}
}

// lowerSHA is a script SHA1 as the caches key it.
func lowerSHA(b []byte) string {
	return strings.ToLower(string(b))
}

// SCRIPT LOAD|EXISTS|FLUSH|KILL
func cmdScript(c *conn, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	switch {
	case sub == "load" && len(args) == 3:
		// Replicated (OpScriptLoad): EVALSHA then works on every node, also
		// after a leader change, which is what redis-py and Redisson
		// (SCRIPT LOAD once, then EVALSHA) rely on.
		r, ok := c.apply(&fsm.Command{Op: fsm.OpScriptLoad, Script: append([]byte(nil), args[2]...)})
		if !ok {
			return
		}
		if !r.Reply.IsError() {
			c.s.scripts.put(fsm.ScriptSHA(args[2]), args[2])
		}
		c.w.WriteReply(r.Reply)
	case sub == "exists" && len(args) >= 3:
		shas := make([]string, len(args)-2)
		for i, a := range args[2:] {
			shas[i] = strings.ToLower(string(a))
		}
		var in []bool
		ctx, cancel := c.ctx()
		err := c.s.b.Read(ctx, false, func(t *fsm.Table, _ int64) { in = t.ScriptSHAs(shas) })
		cancel()
		if err != nil {
			c.writeErr(err)
			return
		}
		c.w.WriteArrayLen(len(shas))
		for i, sha := range shas {
			_, local := c.s.scripts.get(sha)
			if in[i] || local {
				c.w.WriteInt(1)
			} else {
				c.w.WriteInt(0)
			}
		}
	case sub == "flush" && len(args) <= 3:
		// Per node: the replicated cache is bounded by the FSM and shared
		// by every client; clearing it would need a log entry and gains
		// nothing a client can observe beyond NOSCRIPT retries.
		if len(args) == 3 {
			if m := strings.ToLower(string(args[2])); m != "sync" && m != "async" {
				c.w.WriteError("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
				return
			}
		}
		c.s.scripts.flush()
		c.w.WriteStatus("OK")
	case sub == "kill" && len(args) == 2:
		c.w.WriteError("NOTBUSY No scripts in execution right now.")
	case sub == "load" || sub == "exists" || sub == "flush" || sub == "kill":
		c.w.WriteError(errArity("script|" + sub))
	default:
		c.w.WriteError(unknownSubcommand(args[1], "script"))
	}
}
