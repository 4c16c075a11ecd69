package fsm

import "strings"

// errNoForce refuses, for a client without the admin permission
// (Command.NoForce), a Redis command that would end or change a live lock
// without proving it owns it. The prefix is Redis' NOPERM, which clients
// treat as a permission error.
const errNoForce = "NOPERM this user has no permissions to end or change a lock held by another owner (needs +@admin)"

// errUndeclaredKey refuses, in a script of a client limited to key
// patterns (Command.KeysOnly), a call on a key the script did not
// declare in KEYS: Redis' text for a key outside the user's patterns.
const errUndeclaredKey = "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments"

// declaredKeys reports whether every key the command args names is one
// of the running script's KEYS.
func declaredKeys(ctx *applyCtx, args [][]byte) bool {
	for _, k := range CommandKeysOf(lowerName(args[0]), args) {
		found := false
		for _, d := range ctx.scriptKeys {
			if string(d) == string(k) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// forcesLock reports whether the write command name (arity checked)
// would end or change a live lock without the owner's token: DEL,
// UNLINK, GETDEL, DELEX without IFEQ, SET/MSET over it without NX or
// IFEQ, and the expiry commands (GETEX with a time among them) (a PEXPIRE of 1 ms is a forced release). Owner-
// proven forms stay allowed: SET ... IFEQ token, DELEX ... IFEQ token,
// LOCK.RELEASE/EXTEND by owner, and the compare-and-delete/extend
// scripts of the lock libraries, which run natively without going
// through here, and scripts given the holder's token in ARGV. It is
// checked before the command changes anything, so a refused command
// changes nothing.
func (t *redisTable) forcesLock(ctx *applyCtx, name string, args [][]byte) bool {
	if writesElection(name, args) {
		return true
	}
	live := func(k []byte) bool {
		v := t.lookup(ctx, string(k))
		if v == nil || v.Kind() != KindLock {
			return false
		}
		// A script given the holder's token by its caller acts for the
		// owner (redis-py's extend, Redisson-style scripts): knowing the
		// token is what owning a Redis lock means.
		if tok, has, ok := t.stringOf(v); ok && has {
			for _, a := range ctx.proof {
				if string(a) == tok {
					return false
				}
			}
		}
		return true
	}
	switch name {
	case "del", "unlink":
		for _, k := range args[1:] {
			if live(k) {
				return true
			}
		}
	case "mset":
		for i := 1; i < len(args); i += 2 {
			if live(args[i]) {
				return true
			}
		}
	case "set":
		for _, o := range args[3:] {
			if strings.EqualFold(string(o), "nx") || strings.EqualFold(string(o), "ifeq") {
				return false
			}
		}
		return live(args[1])
	case "delex":
		if len(args) == 4 && strings.EqualFold(string(args[2]), "ifeq") {
			return false
		}
		return live(args[1])
	case "pexpire", "expire", "pexpireat", "expireat", "persist", "getdel":
		return live(args[1])
	case "getex":
		return getexChanges(args) && live(args[1])
	}
	return false
}

// electionPrefix is the key prefix of elections' locks (api.ElectionPrefix;
// fsm imports nothing of ours). Their owner string is public (GET shows
// it) while the right to lead is a secret token the election API checks,
// so no Redis command of a client without admin may write such a key,
// whatever token it offers: the bridge refuses the commands that name
// one, and this catches the keys a script did not declare.
const electionPrefix = "election/"

// writesElection reports whether the write command name names a key
// under electionPrefix.
func writesElection(name string, args [][]byte) bool {
	named := false // the common case, without working out key positions
	for _, a := range args[1:] {
		if len(a) >= len(electionPrefix) && string(a[:len(electionPrefix)]) == electionPrefix {
			named = true
			break
		}
	}
	if !named {
		return false
	}
	for _, k := range CommandKeysOf(name, args) {
		if strings.HasPrefix(string(k), electionPrefix) {
			return true
		}
	}
	return false
}
