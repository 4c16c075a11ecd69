package redisbridge

import (
	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/fsm/rediscmd"
)

// refusal is the admission gate's answer to a command it refuses: the
// error reply, and what refusing does besides.
type refusal struct {
	msg string
	// audit is the auth.Reason* the refusal is audited with ("": none).
	audit string
	// abort fails a MULTI block being queued (EXEC then answers
	// EXECABORT), as Redis does for errors found while queueing.
	abort bool
}

// admit is the one admission gate of a known command, in Redis' order of
// checks: arity, authentication, the user's permissions, the election
// guard, cluster mode's slots, RESP2 subscribe mode. dispatch writes the
// refusal; the pipeline proposes only what admit lets through and leaves
// the rest to dispatch, so a refused command keeps its place in the
// replies. slot is the hash slot of the command's keys (-1: none or not
// in cluster mode). Call from serve.
func (c *conn) admit(cmd *command, name string, args [][]byte) (slot int, r *refusal) {
	if !cmd.spec.ArityOK(len(args)) {
		return -1, &refusal{msg: errArity(name), abort: true}
	}
	if !c.acl.authed && cmd.spec.Flags&rediscmd.NoAuth == 0 {
		return -1, &refusal{msg: msgNoAuth, audit: auth.ReasonCredentials}
	}
	if c.s.users != nil && c.acl.authed {
		if msg := c.acl.permission(cmd, name, args); msg != "" {
			return -1, &refusal{msg: msg, audit: auth.ReasonPermission, abort: true}
		}
	}
	if msg := c.acl.electionRefusal(cmd, name, args); msg != "" {
		return -1, &refusal{msg: msg, abort: true}
	}
	slot, msg := c.s.crossSlot(cmd, name, args)
	if msg == "" {
		msg = c.moved(cmd, name, args)
	}
	if msg != "" {
		return -1, &refusal{msg: msg, abort: true}
	}
	if c.w.Proto < 3 && cmd.flags&flagPubSub == 0 && c.s.hub.isSubscribed(c) {
		return -1, &refusal{msg: "ERR Can't execute '" + name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"}
	}
	return slot, nil
}
