package fsm

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/locknode/locknode/fsm/reply"
)

// The Redis key space. Commands follow Redis 7.0 semantics and error
// texts (checked against redis-server 7.0.15 by redis_diff_test.go), with
// these deliberate differences, all for determinism or for the one key
// space shared with native locks (DESIGN.md):
//
//   - SMEMBERS, HKEYS, HVALS and HGETALL reply in sorted (byte) order of
//     members/fields; Redis' order is unspecified.
//   - A lock reads as a string: GET = the exclusive holder's token, PTTL =
//     the remaining lease, TYPE = string, DEL = a forced release, PEXPIRE =
//     an extend. `SET k v NX` on an absent key creates a lock (not a
//     string); SET without NX over a lock force-releases it first. GETDEL
//     is a forced release, GETEX with a time an extend, GETEX PERSIST
//     changes nothing (as PERSIST); INCR, INCRBY, DECR, DECRBY and
//     INCRBYFLOAT answer as Redis does for a string that is not a number,
//     whatever the token reads. Any other write to a lock key is WRONGTYPE.
//   - PUBLISH replies 0: messages are delivered when each node applies the
//     entry (Event EvPublish), after the reply is decided.
//   - INCRBYFLOAT refuses hexadecimal numbers ("0x1p3"), which Redis'
//     strtold reads.
//   - SET ... IFEQ and DELEX (Redis 8.4) are implemented although 7.0 has
//     neither.
//   - Limits (Config.MaxKeyBytes, MaxValueBytes, MaxKeys) refuse a command
//     with an "ERR locknode: ..." reply and change nothing.

// Wire texts of the errors the key space replies with. Clients match some
// of them by prefix (WRONGTYPE, NOSCRIPT).
const (
	errWrongType   = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errSyntax      = "ERR syntax error"
	errNotInt      = "ERR value is not an integer or out of range"
	errNotFloat    = "ERR value is not a valid float"
	errOverflow    = "ERR increment or decrement would overflow"
	errHashNotInt  = "ERR hash value is not an integer"
	errNaN         = "ERR resulting score is not a number (NaN)"
	errMinMax      = "ERR min or max is not a float"
	errPositive    = "ERR value is out of range, must be positive"
	errNoScript    = "NOSCRIPT No matching script. Please use EVAL."
	errKeyTooLong  = "ERR locknode: key longer than MaxKeyBytes"
	errValTooLong  = "ERR locknode: argument longer than MaxValueBytes"
	errKeysFull    = "ERR locknode: key space full (MaxKeys)"
	errScriptLong  = "ERR locknode: script longer than MaxScriptBytes"
	errScriptsFull = "ERR locknode: SCRIPT LOAD cache full (MaxLoadedScripts); SCRIPT FLUSH empties it"
	errROWrite     = "ERR Write commands are not allowed from read-only scripts."
	// OOMText is Redis' refusal of a write under maxmemory, word for
	// word: clients match on the OOM prefix.
	OOMText = "OOM command not allowed when used memory > 'maxmemory'."
)

func errArity(name string) reply.Reply {
	return reply.NewError("ERR wrong number of arguments for '" + name + "' command")
}

func errUnknown(args [][]byte) reply.Reply {
	var b strings.Builder
	fmt.Fprintf(&b, "ERR unknown command '%s', with args beginning with: ", args[0])
	for _, a := range args[1:] {
		fmt.Fprintf(&b, "'%s' ", a)
	}
	return reply.NewError(b.String())
}

var wrongType = reply.NewError(errWrongType)

// redisTable is the Redis commands of a Table: they run on the key-space
// core and reach the locks only through redisLocks, so a lock key reads
// as a string whose value is the holder's token.
type redisTable struct {
	*keySpace
	locks redisLocks
}

// redisLocks is what the Redis commands and the script host ask of the
// lock ops (lockSpace, lock_redis.go): a lock's deadlines, the lock forms
// of SET NX, PEXPIRE and compare-and-delete with its tombstones, and
// what undoing a failed script restores beyond the keys' values.
type redisLocks interface {
	// holdDeadline is when h ends if nothing changes; 0 = none.
	holdDeadline(h *hold) int64
	// redisSetNX takes the token as the command's bytes: a string made
	// for a call through this interface would escape to the heap.
	redisSetNX(ctx *applyCtx, key string, token []byte, ttl int64) bool
	redisLockExpire(ctx *applyCtx, key string, at int64)
	// redisLockExpireValue is redisLockExpire for v, the lock at key.
	redisLockExpireValue(ctx *applyCtx, key string, v *Value, at int64)
	redisReleaseByToken(ctx *applyCtx, key, token string) bool
	redisTombstone(key, token string, now int64) bool

	// saveKeyUndo and restoreKeyUndo keep and put back key's lock
	// state beside its value (tombstones, the pending hold due time).
	saveKeyUndo(key string) keyLockUndo
	restoreKeyUndo(key string, u keyLockUndo)
	// fenceMark and restoreFenceMark keep and put back the highest fence
	// issued.
	fenceMark() uint64
	restoreFenceMark(f uint64)
	// revertSessHold undoes one change to the session index of holds.
	revertSessHold(s undoSess)
	// pump offers key to its waiters (a script that freed it succeeded).
	pump(ctx *applyCtx, key string)
}

// redisCmd is one entry of the command table.
type redisCmd struct {
	name  string // lower case, as in Redis' error texts
	arity int    // Redis convention: n = exactly n args (name included), -n = at least n
	ro    bool   // read-only: Read may run it between entries
	fn    func(t *redisTable, c *applyCtx, args [][]byte) reply.Reply
}

// redisCmds is the command table: the whole Redis surface of the FSM in
// one place. It is filled by init so that handlers may call t.redis
// (scripts, EXEC) without an initialisation cycle.
var redisCmds map[string]*redisCmd

func init() {
	list := []redisCmd{
		// keys and strings (redis_string.go)
		{"get", 2, true, cmdGet},
		{"set", -3, false, cmdSet},
		{"del", -2, false, cmdDel},
		{"unlink", -2, false, cmdDel},
		{"delex", -2, false, cmdDelex},
		{"exists", -2, true, cmdExists},
		{"pexpire", -3, false, cmdPexpire},
		{"expire", -3, false, cmdExpire},
		{"pexpireat", -3, false, cmdPexpireat},
		{"expireat", -3, false, cmdExpireat},
		{"pttl", 2, true, cmdPttl},
		{"ttl", 2, true, cmdTTL},
		{"persist", 2, false, cmdPersist},
		{"type", 2, true, cmdType},
		{"getrange", 4, true, cmdGetrange},
		{"mget", -2, true, cmdMget},
		{"mset", -3, false, cmdMset},
		{"msetnx", -3, false, cmdMsetnx},
		{"incr", 2, false, cmdIncr},
		{"decr", 2, false, cmdDecr},
		{"incrby", 3, false, cmdIncrby},
		{"decrby", 3, false, cmdDecrby},
		{"strlen", 2, true, cmdStrlen},
		{"getdel", 2, false, cmdGetdel},
		{"append", 3, false, cmdAppend},
		{"incrbyfloat", 3, false, cmdIncrbyfloat},
		{"getex", -2, false, cmdGetex},
		{"time", 1, true, cmdTime},
		{"ping", -1, true, cmdPing},
		{"publish", 3, false, cmdPublish},
		// hashes (redis_hash.go)
		{"hget", 3, true, cmdHget},
		{"hset", -4, false, cmdHset},
		{"hmset", -4, false, cmdHmset},
		{"hsetnx", 4, false, cmdHsetnx},
		{"hexists", 3, true, cmdHexists},
		{"hincrby", 4, false, cmdHincrby},
		{"hdel", -3, false, cmdHdel},
		{"hlen", 2, true, cmdHlen},
		{"hkeys", 2, true, cmdHkeys},
		{"hvals", 2, true, cmdHvals},
		{"hgetall", 2, true, cmdHgetall},
		{"hmget", -3, true, cmdHmget},
		// sets (redis_hash.go)
		{"sadd", -3, false, cmdSadd},
		{"srem", -3, false, cmdSrem},
		{"sismember", 3, true, cmdSismember},
		{"scard", 2, true, cmdScard},
		{"smembers", 2, true, cmdSmembers},
		// sorted sets (redis_zset.go)
		{"zadd", -4, false, cmdZadd},
		{"zincrby", 4, false, cmdZincrby},
		{"zrem", -3, false, cmdZrem},
		{"zcard", 2, true, cmdZcard},
		{"zscore", 3, true, cmdZscore},
		{"zrank", 3, true, cmdZrank},
		{"zrange", -4, true, cmdZrange},
		{"zrangebyscore", -4, true, cmdZrangebyscore},
		{"zremrangebyscore", 4, false, cmdZremrangebyscore},
		// lists (redis_list.go)
		{"lpush", -3, false, cmdLpush},
		{"rpush", -3, false, cmdRpush},
		{"lpop", -2, false, cmdLpop},
		{"rpop", -2, false, cmdRpop},
		{"lindex", 3, true, cmdLindex},
		{"lrange", 4, true, cmdLrange},
		{"lrem", 4, false, cmdLrem},
		{"llen", 2, true, cmdLlen},
	}
	redisCmds = make(map[string]*redisCmd, len(list))
	for i := range list {
		redisCmds[list[i].name] = &list[i]
	}
}

func lookupCmd(name []byte) *redisCmd {
	if len(name) > 32 {
		return nil
	}
	// An ASCII name is lowered in a stack buffer (indexing a map with
	// string(b) does not allocate; strings.ToLower of "SET" does, on every
	// command); any other goes through strings.ToLower as always, so every
	// name resolves as before.
	var buf [32]byte
	b := buf[:len(name)]
	for i, c := range name {
		if c >= 0x80 {
			return redisCmds[strings.ToLower(string(name))]
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	return redisCmds[string(b)]
}

func arityOK(c *redisCmd, n int) bool {
	if c.arity >= 0 {
		return n == c.arity
	}
	return n >= -c.arity
}

// redis runs one Redis command inside Apply.
func (t *redisTable) redis(ctx *applyCtx, args [][]byte) reply.Reply {
	if len(args) == 0 {
		return reply.NewError("ERR empty command")
	}
	c := lookupCmd(args[0])
	if c == nil {
		return errUnknown(args)
	}
	if !arityOK(c, len(args)) {
		return errArity(c.name)
	}
	return t.runCmd(ctx, c, args)
}

// runCmd applies the limits every command shares, then runs c.
func (t *redisTable) runCmd(ctx *applyCtx, c *redisCmd, args [][]byte) reply.Reply {
	if ctx.readOnly && !c.ro {
		// Redis refuses write and may-replicate commands (PUBLISH) alike.
		return reply.NewError(errROWrite)
	}
	if !c.ro {
		for _, a := range args[1:] {
			if len(a) > t.cfg.MaxValueBytes {
				return reply.NewError(errValTooLong)
			}
		}
		if ctx.noForce && t.forcesLock(ctx, c.name, args) {
			return reply.NewError(errNoForce)
		}
	}
	if ctx.keysOnly && ctx.inScript && !declaredKeys(ctx, args) {
		return reply.NewError(errUndeclaredKey)
	}
	return c.fn(t, ctx, args)
}

// Read runs the read-only command args at time now (max(now, t.Now())),
// without a log entry and without changing anything: values whose
// deadline has passed by now read as gone. ok is false, and nothing runs,
// when the command is unknown or not read-only.
func (t *redisTable) Read(now int64, args [][]byte) (r reply.Reply, ok bool) {
	if len(args) == 0 {
		return reply.Reply{}, false
	}
	c := lookupCmd(args[0])
	if c == nil || !c.ro {
		return reply.Reply{}, false
	}
	if now < t.now {
		now = t.now
	}
	if !arityOK(c, len(args)) {
		return errArity(c.name), true
	}
	// A scratch context: read-only handlers never mutate, and any event
	// they could emit is dropped with it.
	ctx := &applyCtx{index: t.applied, now: now}
	return c.fn(t, ctx, args), true
}

// KeyVersion returns the version (raft index of the last change) of the
// live value at key as of now, or 0 when there is none. WATCH records it;
// EXEC compares it.
func (t *redisTable) KeyVersion(key string, now int64) uint64 {
	if now < t.now {
		now = t.now
	}
	if v := t.lookup(&applyCtx{now: now}, key); v != nil {
		return v.Version
	}
	return 0
}

// exec runs a MULTI block atomically, after checking the WATCHed versions.
func (t *scripts) exec(ctx *applyCtx, watch []WatchKey, multi [][][]byte) reply.Reply {
	if r, ok := t.execTooBig(multi); !ok {
		return r
	}
	for _, w := range watch {
		if t.KeyVersion(w.Key, ctx.now) != w.Version {
			return reply.Reply{Kind: reply.NilArray}
		}
	}
	out := make([]reply.Reply, 0, len(multi))
	for _, args := range multi {
		if r, ok := t.execScript(ctx, args); ok {
			out = append(out, r)
			continue
		}
		out = append(out, t.redis(ctx, args))
	}
	return reply.NewArray(out...)
}

// ExecLimitText is the EXECABORT reply to a MULTI block over
// Config.MaxExecCommands or MaxExecBytes; the RESP bridge gives the same
// text when it refuses to queue past them.
func ExecLimitText(cfg Config) string {
	return fmt.Sprintf("EXECABORT Transaction discarded: a MULTI block holds at most %d commands (MaxExecCommands) and %d bytes (MaxExecBytes).",
		cfg.MaxExecCommands, cfg.MaxExecBytes)
}

// execTooBig refuses a block over the limits, before anything runs.
func (t *scripts) execTooBig(multi [][][]byte) (reply.Reply, bool) {
	if len(multi) > t.cfg.MaxExecCommands {
		return reply.NewError(ExecLimitText(t.cfg)), false
	}
	n := 0
	for _, args := range multi {
		for _, a := range args {
			n += len(a)
		}
	}
	if n > t.cfg.MaxExecBytes {
		return reply.NewError(ExecLimitText(t.cfg)), false
	}
	return reply.Reply{}, true
}

// execScript runs EVAL, EVALSHA and their _RO forms queued inside MULTI
// (Spring sends its lock scripts that way). EVALSHA finds its text in the
// replicated script cache. ok is false for any other command.
func (t *scripts) execScript(ctx *applyCtx, args [][]byte) (reply.Reply, bool) {
	if len(args) == 0 {
		return reply.Reply{}, false
	}
	var sha, ro bool
	switch strings.ToLower(string(args[0])) {
	case "eval":
	case "eval_ro":
		ro = true
	case "evalsha":
		sha = true
	case "evalsha_ro":
		sha, ro = true, true
	default:
		return reply.Reply{}, false
	}
	if len(args) < 3 {
		return reply.NewError("ERR wrong number of arguments for '" + strings.ToLower(string(args[0])) + "' command"), true
	}
	n, err := strconv.ParseInt(string(args[2]), 10, 64)
	switch {
	case err != nil:
		return reply.NewError("ERR value is not an integer or out of range"), true
	case n < 0:
		return reply.NewError("ERR Number of keys can't be negative"), true
	case n > int64(len(args)-3):
		return reply.NewError("ERR Number of keys can't be greater than number of args"), true
	}
	rest := args[3:]
	if sha {
		return t.evalSHA(ctx, string(args[1]), rest[:n:n], rest[n:], ro), true
	}
	return t.eval(ctx, args[1], rest[:n:n], rest[n:], ro), true
}

// lookup returns the live value at key for a Redis command: nil when
// absent or expired, or when it is a lock nobody holds any more (a lock
// value can outlive its holds for its waiters or lock-delay; to Redis
// clients that key does not exist).
func (t *redisTable) lookup(ctx *applyCtx, key string) *Value {
	v := t.getAt(key, ctx.now)
	if v != nil && v.Kind() == KindLock && !t.lockLive(v.lock(), ctx.now) {
		return nil
	}
	return v
}

// lockLive reports whether some hold of l is still running at now (inside
// Apply expired holds are gone already; Read may look past t.now).
func (t *redisTable) lockLive(l *Lock, now int64) bool {
	for i := 0; i < l.numHolders(); i++ {
		if d := t.locks.holdDeadline(l.holder(i)); d == 0 || d > now {
			return true
		}
	}
	return false
}

// redisLockPTTL returns the remaining ms of the lock's latest hold deadline
// at now (-1 if none).
func (t *redisTable) redisLockPTTL(l *Lock, now int64) int64 {
	var latest int64
	for i := 0; i < l.numHolders(); i++ {
		if d := t.locks.holdDeadline(l.holder(i)); d > latest {
			latest = d
		}
	}
	if latest <= now {
		return -1
	}
	return latest - now
}

// canCreate checks the limits for storing a new value at key.
func (t *redisTable) canCreate(key string) (reply.Reply, bool) {
	if len(key) > t.cfg.MaxKeyBytes {
		return reply.NewError(errKeyTooLong), false
	}
	if _, exists := t.keys[key]; !exists && len(t.keys) >= t.cfg.MaxKeys {
		return reply.NewError(errKeysFull), false
	}
	return reply.Reply{}, true
}

// stringOf returns the string a value reads as (a lock reads as its
// exclusive holder's token); ok is false for other kinds (WRONGTYPE).
// hasVal is false when the value reads as nil (a lock without an
// exclusive holder).
func (t *redisTable) stringOf(v *Value) (s string, hasVal, ok bool) {
	switch v.Kind() {
	case KindString:
		return string(v.Str), true, true
	case KindLock:
		tok, has := v.lock().redisToken()
		return tok, has, true
	}
	return "", false, false
}

// kindName is TYPE's answer.
func kindName(k Kind) string {
	switch k {
	case KindString, KindLock:
		return "string"
	case KindHash:
		return "hash"
	case KindSet:
		return "set"
	case KindZSet:
		return "zset"
	case KindList:
		return "list"
	}
	return "none"
}

func bulkArray(items []string) reply.Reply {
	out := make([]reply.Reply, len(items))
	for i, s := range items {
		out[i] = reply.NewBulk(s)
	}
	return reply.NewArray(out...)
}

func lowerName(b []byte) string { return strings.ToLower(string(b)) }
