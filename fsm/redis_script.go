package fsm

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"

	"github.com/locknode/locknode/fsm/reply"
)

// Scripting: the replicated script cache, EVAL, and the native fast paths
// for the hot Redlock scripts.

// maxScripts bounds the replicated script cache. Like Redis 7.0, EVAL adds
// its script to the cache (so a later EVALSHA works); when the cache is
// full EVAL still runs but adds nothing, and SCRIPT LOAD is refused. The
// cache is part of the snapshot, so every node agrees on what it holds.
const maxScripts = 10000

// redisExt is the Redis state of the Table beyond the key space.
type redisExt struct {
	scripts map[string][]byte // replicated: sha1 hex → script text
	lua     *luaEngine        // derived: compiled scripts; never snapshotted
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

func (x *redisExt) init() {
	x.scripts = map[string][]byte{}
	x.lua = newLuaEngine()
	x.shaOf = map[string]string{}
}

// sha returns ScriptSHA(script), memoised.
func (x *redisExt) sha(script []byte) string {
	if s, ok := x.shaOf[string(script)]; ok {
		return s
	}
	s := ScriptSHA(script)
	if len(script) > maxSHAMemoText {
		return s
	}
	if x.shaOf == nil {
		x.shaOf = map[string]string{}
	} else if len(x.shaOf) >= maxSHAMemo {
		clear(x.shaOf)
	}
	x.shaOf[string(script)] = s
	return s
}

// snapshotScripts returns the cached script texts sorted by SHA1, for the
// snapshot.
func (x *redisExt) snapshotScripts() [][]byte {
	shas := sortedKeys(x.scripts)
	out := make([][]byte, len(shas))
	for i, s := range shas {
		out[i] = x.scripts[s]
	}
	return out
}

// restoreScripts replaces the script cache with the texts of a snapshot.
func (x *redisExt) restoreScripts(s [][]byte) {
	x.scripts = make(map[string][]byte, len(s))
	for _, b := range s {
		x.scripts[ScriptSHA(b)] = bytes.Clone(b)
	}
}

// ScriptSHA returns the lowercase hex SHA1 of script, the name EVALSHA
// and SCRIPT LOAD use.
func ScriptSHA(script []byte) string {
	h := sha1.Sum(script)
	return hex.EncodeToString(h[:])
}

// ScriptBySHA returns the cached script with that SHA1 (lowercase hex),
// for the bridge to turn EVALSHA into an OpEval carrying the text.
func (t *Table) ScriptBySHA(sha string) ([]byte, bool) {
	s, ok := t.rx.scripts[sha]
	return s, ok
}

// ScriptSHAs reports, for each sha, whether the cache holds it (SCRIPT
// EXISTS).
func (t *Table) ScriptSHAs(shas []string) []bool {
	out := make([]bool, len(shas))
	for i, s := range shas {
		_, out[i] = t.rx.scripts[s]
	}
	return out
}

// scriptLoad is SCRIPT LOAD: check that the script compiles, cache it,
// reply its SHA1.
func (t *Table) scriptLoad(ctx *applyCtx, script []byte) reply.Reply {
	if len(script) > t.cfg.MaxScriptBytes {
		return reply.NewError(errScriptLong)
	}
	sha := ScriptSHA(script)
	if _, err := t.rx.lua.compile(sha, script); err != nil {
		return reply.NewError(compileErrText(err))
	}
	if _, ok := t.rx.scripts[sha]; !ok {
		if len(t.rx.scripts) >= maxScripts {
			return reply.NewError(errScriptsFull)
		}
		t.rx.scripts[sha] = bytes.Clone(script)
	}
	return reply.NewBulk(sha)
}

// eval runs script with KEYS and ARGV as one atomic step.
func (t *Table) eval(ctx *applyCtx, script []byte, keys, args [][]byte) reply.Reply {
	if len(script) > t.cfg.MaxScriptBytes {
		return reply.NewError(errScriptLong)
	}
	sha := t.rx.sha(script)
	fam := t.rx.lua.family(sha, script)
	if r, ok := t.evalNative(ctx, fam, keys, args); ok {
		t.cacheScript(sha, script)
		return r
	}
	proto, err := t.rx.lua.compile(sha, script)
	if err != nil {
		return reply.NewError(compileErrText(err))
	}
	t.cacheScript(sha, script)
	// redis_noforce.go: the caller's tokens and declared keys.
	ctx.proof, ctx.inScript, ctx.scriptKeys = args, true, keys
	r := t.runLua(ctx, sha, proto, keys, args)
	ctx.proof, ctx.inScript, ctx.scriptKeys = nil, false, nil
	return r
}

func (t *Table) cacheScript(sha string, script []byte) {
	if _, ok := t.rx.scripts[sha]; !ok && len(t.rx.scripts) < maxScripts {
		t.rx.scripts[sha] = bytes.Clone(script)
	}
}

// Native script families. Each is recognised by the SHA1 of the exact
// text a client sends or of its whitespace-normalised form (see
// hotScripts), and gives the same reply and effects as running the text,
// with one addition the Lua path cannot make (DESIGN.md, Redlock quorum):
// a compare-and-delete or compare-and-pexpire by the token whose hold on
// the key just ended by its own release answers 1, touching nothing.
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
)

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
}

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
func (t *Table) evalNative(ctx *applyCtx, fam scriptFamily, keys, args [][]byte) (reply.Reply, bool) {
	if fam == famNone || len(keys) < 1 || len(args) < 1 {
		return reply.Reply{}, false
	}
	key, token := string(keys[0]), string(args[0])
	var ms int64
	if fam == famCAPE || fam == famCAPE1 {
		var ok bool
		if len(args) < 2 {
			return reply.Reply{}, false
		}
		if ms, ok = parseInt(args[1]); !ok || ms <= 0 || addOverflows(ms, ctx.now) {
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
	if !has || cur != token {
		repeat := t.redisTombstone
		if fam == famCAPE || fam == famCAPE1 {
			repeat = t.redisTombstoneLatest
		}
		if repeat(key, token, ctx.now) {
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
			t.redisReleaseByToken(ctx, key, token)
		} else {
			t.del(ctx, key, ReasonForced)
		}
	case famCAPE, famCAPE1:
		at := ctx.now + ms
		if v.Kind() == KindLock {
			t.redisLockExpire(ctx, key, at)
		} else {
			t.setDeadline(ctx, key, v, at)
		}
	}
	return reply.NewInt(1), true
}
