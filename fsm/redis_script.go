package fsm

import (
	"bytes"
	"strings"

	"github.com/locknode/locknode/fsm/luaengine"
	"github.com/locknode/locknode/fsm/reply"
)

// Scripting: the replicated script cache, EVAL, and the native fast paths
// for the hot Redlock scripts.

// scripts is the script host of a Table: EVAL and EVALSHA with their
// replicated cache and the undo of a failed script, MULTI/EXEC and SCRIPT
// LOAD/FLUSH. Scripts run the Redis commands (redisTable) as redis.call.
type scripts struct {
	*redisTable

	cache  scriptCache       // replicated (script_cache.go)
	engine *luaengine.Engine // derived: compiled scripts; never snapshotted
	// host is what the running script's redis.call reaches (scriptHost),
	// kept here so that handing it to the engine allocates nothing.
	host scriptHost
	// shaOf memoises ScriptSHA of texts EVAL'd recently (derived, never
	// snapshotted): a SHA1 plus its hex string for every EVAL of the same
	// few lock scripts was a measurable part of an unlock's apply.
	shaOf map[string]string
}

// maxSHAMemo bounds shaOf (it is emptied when full), maxSHAMemoText the
// texts it keeps: lock scripts are a few hundred bytes.
const (
	maxSHAMemo     = 64
	maxSHAMemoText = 4 << 10
)

func (t *scripts) init() {
	t.cache.init()
	t.engine = luaengine.New()
	t.shaOf = map[string]string{}
}

// sha returns ScriptSHA(script), memoised.
func (t *scripts) sha(script []byte) string {
	if s, ok := t.shaOf[string(script)]; ok {
		return s
	}
	s := ScriptSHA(script)
	if len(script) > maxSHAMemoText {
		return s
	}
	if t.shaOf == nil {
		t.shaOf = map[string]string{}
	} else if len(t.shaOf) >= maxSHAMemo {
		clear(t.shaOf)
	}
	t.shaOf[string(script)] = s
	return s
}

// ScriptSHA returns the lowercase hex SHA1 of script, the name EVALSHA
// and SCRIPT LOAD use.
func ScriptSHA(script []byte) string { return luaengine.SHA(script) }

// scriptLoad is SCRIPT LOAD: check that the script compiles, keep it
// until SCRIPT FLUSH, reply its SHA1.
func (t *scripts) scriptLoad(ctx *applyCtx, script []byte) reply.Reply {
	if len(script) > t.cfg.MaxScriptBytes {
		return reply.NewError(errScriptLong)
	}
	sha := ScriptSHA(script)
	if _, err := t.engine.Compile(sha, script); err != nil {
		return reply.NewError(err.Error())
	}
	if !t.cache.load(sha, script, t.cfg.MaxLoadedScripts) {
		return reply.NewError(errScriptsFull)
	}
	return reply.NewBulk(sha)
}

// scriptFlush is SCRIPT FLUSH: every node empties its cache at the same
// index. Compiled scripts stay in the node-local engine; they are found
// only through the cache, by SHA1 of the same text.
func (t *scripts) scriptFlush() reply.Reply {
	t.cache.flush()
	return reply.OK
}

// eval runs script with KEYS and ARGV as one atomic step, and caches it
// (least recently used evicted) so that EVALSHA finds it. ro is EVAL_RO:
// a write command from the script fails.
func (t *scripts) eval(ctx *applyCtx, script []byte, keys, args [][]byte, ro bool) reply.Reply {
	if len(script) > t.cfg.MaxScriptBytes {
		return reply.NewError(errScriptLong)
	}
	sha := t.sha(script)
	if !ro {
		// The native paths write; a read-only run takes the Lua path,
		// which refuses the write as Redis does.
		fam := t.family(sha, script)
		if r, ok := t.evalNative(ctx, fam, keys, args); ok {
			t.cache.addEval(sha, script, t.cfg.MaxEvalScripts)
			return r
		}
	}
	s, err := t.engine.Compile(sha, script)
	if err != nil {
		return reply.NewError(err.Error())
	}
	r, failed := t.runScript(ctx, s, keys, args, ro)
	if !failed {
		// A failed script leaves no trace, in the cache neither; the
		// script cannot see the cache, so caching it after the run is
		// the same as before.
		t.cache.addEval(sha, script, t.cfg.MaxEvalScripts)
	}
	return r
}

// evalSHA is EVALSHA: the script must be in the cache at this index,
// else NOSCRIPT (Redis' text, on which clients fall back to EVAL).
func (t *scripts) evalSHA(ctx *applyCtx, sha string, keys, args [][]byte, ro bool) reply.Reply {
	sha = strings.ToLower(sha)
	mark := t.cache.markOf(sha)
	script, ok := t.cache.use(sha)
	if !ok {
		return reply.NewError(errNoScript)
	}
	if !ro {
		if r, ok := t.evalNative(ctx, t.family(sha, script), keys, args); ok {
			return r
		}
	}
	s, err := t.engine.Compile(sha, script)
	if err != nil {
		return reply.NewError(err.Error()) // not reached: cached scripts compiled
	}
	t.undo.cacheAt = mark
	r, _ := t.runScript(ctx, s, keys, args, ro)
	return r
}

// runScript runs a compiled script; with ro set every write command it
// calls fails (runCmd). A script that fails (failed) changed nothing
// (script_undo.go).
func (t *scripts) runScript(ctx *applyCtx, s *luaengine.Script, keys, args [][]byte, ro bool) (r reply.Reply, failed bool) {
	// ro: every write command fails (runCmd); proof, inScript and
	// scriptKeys: the caller's tokens and declared keys (redis_noforce.go).
	ctx.readOnly = ro
	ctx.proof, ctx.inScript, ctx.scriptKeys = args, true, keys
	t.undo.begin(t.keySpace, t.locks.fenceMark(), ctx)
	t.undo.failed = true // until the engine says otherwise
	h := &t.host
	h.t, h.ctx = t, ctx
	defer func() {
		ctx.readOnly = false
		ctx.proof, ctx.inScript, ctx.scriptKeys = nil, false, nil
		h.t, h.ctx = nil, nil
		if t.undo.on { // the script panicked: Apply refuses the entry
			t.undo.failed = true
			t.undoEnd(ctx)
		}
	}()
	lim := luaengine.Limits{MaxSteps: t.cfg.MaxScriptSteps, MaxMemory: t.cfg.MaxScriptMemory, MaxValueBytes: t.cfg.MaxValueBytes}
	used := luaengine.Usage{Steps: ctx.luaSteps, Mem: ctx.luaMem}
	r, t.undo.failed = t.engine.Run(h, s, keys, args, lim, &used)
	ctx.luaSteps, ctx.luaMem = used.Steps, used.Mem
	return r, t.undoEnd(ctx)
}

// scriptHost is the Table as a running script's host: redis.call runs a
// command through the same path as OpRedis, so locks behave the same
// inside scripts, after saving the undo copy of what it will write.
type scriptHost struct {
	t   *scripts
	ctx *applyCtx
	// cmds caches command lookups by the name as the script spelled it.
	cmds map[string]*redisCmd
}

// scriptCmdCache bounds scriptHost.cmds.
const scriptCmdCache = 128

// Call implements luaengine.Host.
func (h *scriptHost) Call(mem luaengine.Budget, args [][]byte) reply.Reply {
	cmd := h.lookup(args[0])
	if cmd == nil {
		return reply.NewError("ERR Unknown Redis command called from script")
	}
	if !arityOK(cmd, len(args)) {
		return reply.NewError("ERR Wrong number of args calling Redis command from script")
	}
	if !cmd.ro && !h.ctx.readOnly {
		// The undo copy of the keys it names (script_undo.go).
		mem.ChargeMem(h.t.undoCost(cmd.name, args))
		h.t.undoSave(cmd.name, args)
	}
	return h.t.runCmd(h.ctx, cmd, args)
}

// lookup finds the command a script names, remembering the spelling.
func (h *scriptHost) lookup(name []byte) *redisCmd {
	if c, ok := h.cmds[string(name)]; ok {
		return c
	}
	c := lookupCmd(name)
	if c != nil && len(h.cmds) < scriptCmdCache {
		if h.cmds == nil {
			h.cmds = map[string]*redisCmd{}
		}
		h.cmds[string(name)] = c
	}
	return c
}

// family returns the native family of script (famNone for most), kept
// with its compiled form in the engine's cache.
func (t *scripts) family(sha string, script []byte) scriptFamily {
	return scriptFamily(t.engine.Tag(sha, script, classifyTag))
}

func classifyTag(script []byte) uint8 { return uint8(classify(script)) }

// Native script families. Each is recognised by the SHA1 of the exact
// text a client sends or of its whitespace-normalised form (see
// hotScripts), and gives the same reply and effects as running the text,
// with one addition the Lua path cannot make (DESIGN.md, Redlock quorum):
// a compare-and-delete by the token whose hold on the key just ended by
// its own release answers 1, touching nothing. A compare-and-pexpire gets
// no such answer: after a release it answers 0, as the Lua text does.
type scriptFamily uint8

const (
	famNone scriptFamily = iota
	// famCAD: if GET(KEYS[1]) == ARGV[1] then return DEL(KEYS[1]) else 0
	famCAD
	// famCADMissing: as famCAD, but -1 when the key is missing (redsync).
	famCADMissing
	// famCAD1: as famCAD, but the reply is 1 whatever DEL replied (redis-py).
	famCAD1
	// famCAPE: if GET == ARGV[1] then return PEXPIRE(KEYS[1], ARGV[2]) else 0
	famCAPE
	// famCAPE1: as famCAPE, but the reply is 1 (redis-py reacquire).
	famCAPE1
	// famHashRenew: if HEXISTS(KEYS[1], ARGV[2]) == 1 then
	// PEXPIRE(KEYS[1], ARGV[1]); return 1 else 0 (Redisson's watchdog
	// renewal of its hash lock). Native from VersionRedissonRenew on.
	famHashRenew
)

// VersionRedissonRenew is the cluster version from which famHashRenew
// runs natively and is a renewal (RenewalScript, RenewalSHA). Before it
// every node decides as a binary without the family does: the text runs
// in Lua (spending the entry's script budget, where the native path
// spends none) and a batched renewal of it is refused. It shares
// VersionBoundedExpiry's number: both come in the same release.
const VersionRedissonRenew = VersionBoundedExpiry

// hotScripts are the scripts with a native path: the texts clients send
// (go-redsync/redsync v4 scripts.go, bsm/redislock v0.9 redislock.go,
// redis-py lock.py), written out here in their shape; matching uses the
// normalised form, so indentation and line endings do not matter.
var hotScripts = []struct {
	fam  scriptFamily
	text string
}{
	// redsync v4 deleteScript
	{famCADMissing, `
	local val = redis.call("GET", KEYS[1])
	if val == ARGV[1] then
		return redis.call("DEL", KEYS[1])
	elseif val == false then
		return -1
	else
		return 0
	end
`},
	// redsync v4 touchScript
	{famCAPE, `
	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	else
		return 0
	end
`},
	// bsm/redislock luaRelease / luaRefresh, and the common go-redis forms
	{famCAD, `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`},
	{famCAD, `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`},
	{famCAD, `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`},
	{famCAD, `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`},
	{famCAD, `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("unlink", KEYS[1]) else return 0 end`},
	{famCAPE, `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`},
	{famCAPE, `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) else return 0 end`},
	{famCAPE, `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`},
	// redis-py Lock LUA_RELEASE_SCRIPT / LUA_REACQUIRE_SCRIPT
	{famCAD1, `
        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        redis.call('del', KEYS[1])
        return 1
    `},
	{famCAPE1, `
        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        redis.call('pexpire', KEYS[1], ARGV[2])
        return 1
    `},
	// Redisson 3.x watchdog renewal (RedissonBaseLock.renewExpirationAsync,
	// RedissonLock's in older releases). Releases with a lock renewal
	// scheduler renew many keys in one script instead: not this family.
	{famHashRenew, redissonRenewText},
}

// redissonRenewText is the text Redisson's watchdog sends to renew a hash
// lock, whose SHA1 RenewalSHA knows.
const redissonRenewText = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then " +
	"redis.call('pexpire', KEYS[1], ARGV[1]); " +
	"return 1; " +
	"end; " +
	"return 0;"

// hotBySHA maps the SHA1 of each hot script's normalised text to its
// family.
var hotBySHA = func() map[string]scriptFamily {
	m := map[string]scriptFamily{}
	for _, h := range hotScripts {
		m[ScriptSHA(normaliseScript([]byte(h.text)))] = h.fam
	}
	return m
}()

// normaliseScript strips a UTF-8 BOM, turns every run of white space
// (CR included) into one space and trims the ends.
func normaliseScript(b []byte) []byte {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	return []byte(string(bytes.Join(bytes.Fields(b), []byte(" "))))
}

func classify(script []byte) scriptFamily {
	return hotBySHA[ScriptSHA(normaliseScript(script))]
}

// evalNative runs a hot script natively. ok is false when the script has
// no native path or the input is one the native path does not cover
// (missing KEYS/ARGV, a non-string value, an unusual TTL): the caller then
// runs the Lua text, which produces Redis' exact reply or error.
func (t *scripts) evalNative(ctx *applyCtx, fam scriptFamily, keys, args [][]byte) (reply.Reply, bool) {
	if fam == famHashRenew {
		return t.hashRenewNative(ctx, keys, args)
	}
	if fam == famNone || len(keys) < 1 || len(args) < 1 {
		return reply.Reply{}, false
	}
	// The token is compared, not kept (a renewal keeps nothing of it):
	// no string of it unless a compare-and-delete needs one.
	key, token := string(keys[0]), args[0]
	var ms int64
	if fam == famCAPE || fam == famCAPE1 {
		var ok bool
		if len(args) < 2 {
			return reply.Reply{}, false
		}
		// Past MaxTTL the Lua text runs: its PEXPIRE refuses a lock's lease
		// over the limit with the error, as a plain PEXPIRE does.
		if ms, ok = parseInt(args[1]); !ok || ms <= 0 || ms > t.cfg.MaxTTL || addOverflows(ms, ctx.now) {
			return reply.Reply{}, false
		}
	}
	if len(key) > t.cfg.MaxKeyBytes {
		return reply.Reply{}, false
	}
	v := t.lookup(ctx, key)
	var cur string
	var has bool
	if v != nil {
		var isStr bool
		if cur, has, isStr = t.stringOf(v); !isStr {
			return reply.Reply{}, false
		}
	}
	if !has || cur != string(token) {
		// Only a repeated compare-and-delete is answered from the
		// tombstone (Redlock quorum on unlock). A compare-and-pexpire by a
		// token that no longer holds the key answers 0 even right after
		// its own release: "extended" would tell the client it holds a
		// lock that anyone may take next.
		if (fam == famCAD || fam == famCADMissing || fam == famCAD1) && t.locks.redisTombstone(key, string(token), ctx.now) {
			return reply.NewInt(1), true
		}
		if !has && fam == famCADMissing {
			return reply.NewInt(-1), true
		}
		return reply.NewInt(0), true
	}
	switch fam {
	case famCAD, famCADMissing, famCAD1:
		if v.Kind() == KindLock {
			t.locks.redisReleaseByToken(ctx, key, string(token))
		} else {
			t.del(ctx, key, ReasonForced)
			ctx.notify(NotifyDel, key)
		}
	case famCAPE, famCAPE1:
		at := ctx.now + ms
		if v.Kind() == KindLock {
			t.locks.redisLockExpireValue(ctx, key, v, at)
		} else {
			t.setDeadline(ctx, key, v, at)
			ctx.notify(NotifyExpire, key)
		}
	}
	return reply.NewInt(1), true
}

// hashRenewNative is famHashRenew: ARGV[1] is the TTL in ms, ARGV[2] the
// owner's field. The family is known from the text alone (and kept in the
// engine's cache whatever the version), so the version is checked here,
// at each apply: before VersionRedissonRenew the Lua text runs. ok is
// false, and the Lua text runs, for every input the text may answer with
// an error or a deletion: a key of another kind (WRONGTYPE from HEXISTS),
// a TTL that is not a positive integer or is past MaxTTL, a key or a TTL
// over the size limits (the text answers 0 for such a TTL when the field
// is missing: it never reaches PEXPIRE).
func (t *scripts) hashRenewNative(ctx *applyCtx, keys, args [][]byte) (reply.Reply, bool) {
	if !t.gate(VersionRedissonRenew) || len(keys) < 1 || len(args) < 2 {
		return reply.Reply{}, false
	}
	key := keys[0]
	if len(key) > t.cfg.MaxKeyBytes || len(key) > t.cfg.MaxValueBytes || len(args[0]) > t.cfg.MaxValueBytes {
		return reply.Reply{}, false
	}
	ms, ok := parseInt(args[0])
	if !ok || ms <= 0 || ms > t.cfg.MaxTTL || addOverflows(ms, ctx.now) {
		return reply.Reply{}, false
	}
	v := t.lookup(ctx, string(key))
	if v == nil {
		return reply.NewInt(0), true
	}
	if v.Kind() != KindHash {
		return reply.Reply{}, false
	}
	if _, held := v.Hash[string(args[1])]; !held {
		return reply.NewInt(0), true
	}
	// PEXPIRE of a hash to a time ahead: what expireGeneric does.
	t.setDeadline(ctx, string(key), v, ctx.now+ms)
	ctx.notify(NotifyExpire, string(key))
	return reply.NewInt(1), true
}
