package redisbridge

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/fsm/rediscmd"
	"github.com/locknode/locknode/redisbridge/resp"
)

// cmdData serves a Redis command of the FSM: a read-only one in one
// linearizable Read, any other as one OpRedis entry. The FSM decides
// arity, options and outcome (SET NX, compare-and-delete, ...), so the
// bridge never reads before it writes.
func cmdData(c *conn, args [][]byte) {
	if s := rediscmd.LookupBytes(args[0]); s != nil && !s.Writes() {
		c.readRedis(args)
		return
	}
	c.applyRedis(args)
}

// EVAL script numkeys [key ...] [arg ...]: one OpEval entry; the script
// runs inside Apply on every node, which caches it for EVALSHA.
func cmdEval(c *conn, args [][]byte) { c.evalText(args, false) }

// EVAL_RO: as EVAL, but a write command from the script fails. It goes
// through the log too: Read holds the table for reading only, and the
// Lua engine's caches and interpreters are the apply path's.
func cmdEvalRO(c *conn, args [][]byte) { c.evalText(args, true) }

// EVALSHA sha1 numkeys [key ...] [arg ...]: one OpEvalSHA entry carrying
// the SHA1 alone; the FSM runs the script its cache holds at that index,
// or answers NOSCRIPT (so a SCRIPT FLUSH through any node, or an
// eviction, is seen by every node at once).
func cmdEvalSHA(c *conn, args [][]byte) { c.evalSHA(args, false) }

// EVALSHA_RO: as EVALSHA, read-only as EVAL_RO.
func cmdEvalSHARO(c *conn, args [][]byte) { c.evalSHA(args, true) }

func (c *conn) evalText(args [][]byte, ro bool) {
	keys, argv, ok := scriptArgs(c.w, args)
	if !ok {
		return
	}
	c.applyReply(evalCommand(c.entry(), bytes.Clone(args[1]), keys, argv, ro))
}

func (c *conn) evalSHA(args [][]byte, ro bool) {
	keys, argv, ok := scriptArgs(c.w, args)
	if !ok {
		return
	}
	if len(args[1]) != 40 {
		// No SHA1: Redis answers at once too.
		c.w.WriteError(msgNoScript)
		return
	}
	c.applyReply(evalSHACommand(c.entry(), args[1], keys, argv, ro))
}

func (c *conn) applyReply(cmd *fsm.Command) {
	if r, ok := c.apply(cmd); ok {
		c.w.WriteReply(r.Reply)
	}
}

// scriptArgs splits EVAL's arguments into KEYS and ARGV, or writes the
// error.
func scriptArgs(w *resp.Writer, args [][]byte) (keys, argv [][]byte, ok bool) {
	keys, argv, msg := parseScriptArgs(args)
	if msg != "" {
		w.WriteError(msg)
		return nil, nil, false
	}
	return keys, argv, true
}

// parseScriptArgs splits EVAL's arguments (copied) into KEYS and ARGV, or
// returns the error reply's text.
func parseScriptArgs(args [][]byte) (keys, argv [][]byte, msg string) {
	keys, _, msg = splitScriptArgs(args)
	if msg != "" {
		return nil, nil, msg
	}
	rest := resp.CloneArgs(args[3:])
	return rest[:len(keys):len(keys)], rest[len(keys):], ""
}

// splitScriptArgs is parseScriptArgs without the copy: KEYS and ARGV
// alias args.
func splitScriptArgs(args [][]byte) (keys, argv [][]byte, msg string) {
	n, err := strconv.ParseInt(string(args[2]), 10, 64)
	switch {
	case err != nil:
		return nil, nil, msgNumKeysNotInt
	case n < 0:
		return nil, nil, msgNumKeysNeg
	case n > int64(len(args)-3):
		return nil, nil, msgNumKeysBig
	}
	rest := args[3:]
	return rest[:n:n], rest[n:], ""
}

// evalCommand is EVAL's (ro: EVAL_RO's) log entry, written into cmd. The
// entry refers to script, keys and argv: they must not change while it
// is in use.
func evalCommand(cmd *fsm.Command, script []byte, keys, argv [][]byte, ro bool) *fsm.Command {
	*cmd = fsm.Command{Op: fsm.OpEval, Script: script, KeysB: keys, Args: argv, ReadOnly: ro}
	return cmd
}

// evalSHACommand is EVALSHA's (ro: EVALSHA_RO's) log entry, written into
// cmd.
func evalSHACommand(cmd *fsm.Command, sha []byte, keys, argv [][]byte, ro bool) *fsm.Command {
	*cmd = fsm.Command{Op: fsm.OpEvalSHA, Key: strings.ToLower(string(sha)), KeysB: keys, Args: argv, ReadOnly: ro}
	return cmd
}

// SCRIPT LOAD|EXISTS|FLUSH|KILL
func cmdScript(c *conn, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	switch {
	case sub == "load" && len(args) == 3:
		// Replicated (OpScriptLoad): EVALSHA then works on every node, also
		// after a leader change, which is what redis-py and Redisson
		// (SCRIPT LOAD once, then EVALSHA) rely on.
		c.applyReply(&fsm.Command{Op: fsm.OpScriptLoad, Script: bytes.Clone(args[2])})
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
		for _, cached := range in {
			if cached {
				c.w.WriteInt(1)
			} else {
				c.w.WriteInt(0)
			}
		}
	case sub == "flush" && len(args) <= 3:
		// Replicated (OpScriptFlush): every node's cache is emptied at the
		// same index. SYNC and ASYNC are the same here: emptying the cache
		// is dropping two maps.
		if len(args) == 3 {
			if m := strings.ToLower(string(args[2])); m != "sync" && m != "async" {
				c.w.WriteError(msgFlushMode)
				return
			}
		}
		c.applyReply(&fsm.Command{Op: fsm.OpScriptFlush})
	case sub == "kill" && len(args) == 2:
		c.w.WriteError("NOTBUSY No scripts in execution right now.")
	case sub == "load" || sub == "exists" || sub == "flush" || sub == "kill":
		c.w.WriteError(errArity("script|" + sub))
	default:
		c.w.WriteError(unknownSubcommand(args[1], "script"))
	}
}
