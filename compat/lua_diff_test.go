package compat

import (
	"fmt"
	"testing"
	"time"
)

// TestLuaDifferentialVsRedis runs scripts through a follower's bridge and
// through redis-server, in RESP2 and RESP3, and compares the replies byte
// for byte: error texts (Lua 5.1's runtime messages, Redis 7's suffix),
// reply conversions (redis.setresp(3), {double=...}, {map=...}), the
// redis.* helpers and the libraries (cjson, bit, struct, cmsgpack).
func TestLuaDifferentialVsRedis(t *testing.T) {
	redisAddr := startRedis(t)
	tc := newCluster(t, 3)
	node := (tc.leader(10*time.Second) + 1) % 3
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			for _, seq := range luaSequences() {
				t.Run(seq.name, func(t *testing.T) {
					runDiff(t, seq, dialRESP(t, redisAddr, proto), dialRESP(t, tc.resp[node], proto),
						fmt.Sprintf("%s-%d", uniq("l"), proto))
				})
			}
		})
	}
}

// whyCompileWording: gopher-lua's parser is a yacc grammar that knows the
// token it stopped at, not what Lua's parser expected there.
const whyCompileWording = "every syntax error reads \"unexpected symbol near\" the token"

func luaSequences() []sequence {
	const H, S, Z, K = "$P:hash", "$P:set", "$P:zset", "$P:k"
	errs := func(scripts ...string) []step {
		var out []step
		for _, s := range scripts {
			out = append(out, eval(s, nil))
		}
		return out
	}
	return []sequence{
		{name: "runtime errors", keepGoing: true, steps: append(errs(
			"local x; return x.y",
			"local t = {} return t.a.b",
			"local t = {} t.x.y = 1",
			"return ARGV[1].foo",
			"return 1 + nil",
			"local a; return a + 1",
			"local a = {}; return a.b * 2",
			"local a; return -a",
			"return {} .. 'x'",
			"local a; return 'x' .. a",
			"local a = 'x'; return #a + #nil",
			"local f; f()",
			"local t = {}; t.f()",
			"local s = 'x'; return s:nope()",
			"return KEYS.x()",
			"local u; local function f() return u.x end return f()",
			"return 1 < 'a'",
			"return {} < {}",
			"for i = 1, 'x' do end",
			"for i = 'x', 1 do end",
			"return y",
			"y = 1",
			"error('boom')",
			"error('boom', 0)",
			"error('boom', 2)",
			"error()",
			"error(42)",
			"error({err='MY boom'})",
			"error(redis.error_reply('X y'))",
			"\nlocal a = 1\n\nlocal b = a.c",
			"local function f()\n  error({err='ERR deep'})\nend\nf()",
			"return math.floor('x')",
			"return string.rep()",
			"return ('x'):rep('y')",
			"return tostring()",
			"local ok, e = pcall(function() local z; return z.q end) return e",
			"local ok, e = pcall(function() error({err='E'}) end) return {tostring(ok), e}",
			"return redis.call()",
			"return redis.call('nosuchcommand')",
			"return redis.call('get')",
			"return redis.call('get', {})",
			"return redis.pcall('get')",
			"return 1 +",
			"return (",
			"x = = 2",
			"return 'abc",
		), eval("local = 1", nil).deviates(
			"-ERR Error compiling script (new function): user_script:1: unexpected symbol near '='", whyCompileWording),
			cmd("SET", K, "notanumber"),
			eval("return redis.call('incr', KEYS[1])", keys(K)),
			eval("local v = redis.call('get', KEYS[1])\nreturn redis.call('incr', KEYS[1])", keys(K)),
		)},
		{name: "reply conversions", keepGoing: true, keys: keys(H, S, Z), steps: []step{
			cmd("HSET", H, "a", "1"),
			cmd("SADD", S, "x"),
			cmd("ZADD", Z, "1.5", "m", "2", "n"),
			eval("return {double=3.5}", nil),
			eval("return {double=0.1}", nil),
			eval("return {double=1/0}", nil),
			eval("return {double=-1/0}", nil),
			eval("return {double=1e300}", nil),
			eval("return {double='x'}", nil),
			eval("return {1, {double=2.5}, 'z'}", nil),
			eval("return {map={a=1}}", nil),
			eval("return {map={a={1, 2}}}", nil),
			eval("return {set={a=true}}", nil),
			eval("return {map={}}", nil),
			eval("return {big_number='1234567890123456789012'}", nil),
			eval("return {verbatim_string={format='txt', string='abc'}}", nil),
			eval("return {map={a=1}, double=2}", nil),
			eval("return {ok='fine', err='ERR wins'}", nil),
			eval("return true", nil),
			eval("return false", nil),
			eval("redis.setresp(3) return true", nil),
			eval("redis.setresp(3) return false", nil),
			eval("redis.setresp(3) return {1, false, true}", nil),
			eval("redis.setresp(3) redis.setresp(2) return false", nil),
			eval("redis.setresp(3) return redis.call('hgetall', KEYS[1])", keys(H)),
			eval("redis.setresp(3) local t = redis.call('hgetall', KEYS[1]) return {type(t.map), t.map.a}", keys(H)),
			eval("redis.setresp(3) return redis.call('smembers', KEYS[1])", keys(S)),
			eval("redis.setresp(3) local t = redis.call('smembers', KEYS[1]) return tostring(t.set.x)", keys(S)),
			eval("redis.setresp(3) return redis.call('zscore', KEYS[1], 'm')", keys(Z)),
			eval("redis.setresp(3) local d = redis.call('zscore', KEYS[1], 'm') return {type(d), tostring(d.double)}", keys(Z)),
			eval("redis.setresp(3) return redis.call('zrange', KEYS[1], 0, -1, 'withscores')", keys(Z)),
			eval("redis.setresp(3) local p = redis.call('zrange', KEYS[1], 0, -1, 'withscores') return {p[1][1], tostring(p[1][2].double)}", keys(Z)),
			eval("redis.setresp(3) return type(redis.call('get', KEYS[1]))", keys("$P:none")),
			eval("redis.setresp(3) return redis.call('get', KEYS[1])", keys("$P:none")),
			eval("return type(redis.call('get', KEYS[1]))", keys("$P:none")),
			eval("return redis.call('zscore', KEYS[1], 'm')", keys(Z)),
			eval("return redis.call('hgetall', KEYS[1])", keys(H)),
			eval("return redis.setresp(4)", nil),
			eval("return redis.setresp()", nil),
			eval("return redis.setresp('3')", nil),
			eval("return redis.setresp(2, 3)", nil),
		}},
		{name: "redis helpers", keepGoing: true, steps: []step{
			eval("return redis.sha1hex('abc')", nil),
			eval("return redis.sha1hex('')", nil),
			eval("return redis.sha1hex()", nil),
			eval("return redis.log(redis.LOG_WARNING, 'x')", nil),
			eval("return redis.log(redis.LOG_WARNING)", nil),
			eval("return redis.log('x', 'y')", nil),
			eval("return redis.log(7, 'y')", nil),
			eval("return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}", nil),
			eval("return redis.status_reply('FINE')", nil),
			eval("return redis.error_reply('MY err')", nil),
			eval("return redis.error_reply('-MY err')", nil),
			eval("return redis.call('publish', KEYS[1], 'm')", keys("$P:chan")),
			eval("return redis.pcall('publish', KEYS[1], 'm')", keys("$P:chan")),
		}},
	}
}
