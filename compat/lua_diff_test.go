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
			"local = 1",
			"if true then\nreturn 1",
			"for i = 1 do end",
			"return 1 2",
			"f\n(1)",
			"goto x",
			"break",
			"local function f() return ... end",
			"return 'a\\300'",
		), cmd("SET", K, "notanumber"),
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
		{name: "bit", keepGoing: true, steps: errs(
			"return {bit.tobit(0xffffffff), bit.tobit(2^32 + 5), bit.tobit(-1), bit.tobit(1.5), bit.tobit(2.5), bit.tobit('7')}",
			"return {bit.bnot(0), bit.band(0xff, 0x0f, 0x3), bit.bor(1, 2, 4, 8), bit.bxor(0xf0, 0xff), bit.band(5)}",
			"return {bit.lshift(1, 31), bit.lshift(1, 32), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rol(0x12345678, 8), bit.ror(0x12345678, 8)}",
			"return {bit.tohex(255), bit.tohex(-1), bit.tohex(0xabcdef, 4), bit.tohex(0xabcdef, -4), bit.tohex(1, 12), bit.bswap(0x12345678)}",
			"return bit.band()",
			"return bit.band(1, {})",
			"return bit.tobit('x')",
			"return bit.lshift(1)",
		)},
		{name: "cjson", keepGoing: true, steps: errs(
			"return cjson.encode({})",
			"return cjson.encode({1, 2, nil, 4})",
			"return cjson.encode({[2]=1, [3]=2})",
			"return cjson.encode({[1]=1, [20]=2})",
			"return cjson.encode({1, 2, 3, nil, nil, nil, nil, nil, nil, nil, nil, 12})",
			`return cjson.encode({a='x/y"\\\n\1\127\200'})`,
			"return cjson.encode({1/3, 1e20, -0, 123456789012345678, 0.1, -1.5e-7})",
			"return cjson.encode(0/0)",
			"return cjson.encode(1/0)",
			"return cjson.encode(function() end)",
			"return cjson.encode({[true]=1})",
			"return cjson.encode({[1.5]=1})",
			"return cjson.encode({a={b={c={1, true, false}}}})",
			"return cjson.encode(cjson.null)",
			"return cjson.encode({cjson.null, 'x'})",
			"return cjson.encode('plain')",
			"return cjson.encode()",
			"return cjson.encode(1, 2)",
			"local t = {} local c = t for i = 1, 1100 do c[1] = {} c = c[1] end return cjson.encode(t)",
			"return tostring(cjson.null)",
			"return type(cjson.null)",
			"return cjson.decode('[1,2,3]')",
			"return cjson.decode('{\"a\":1}').a",
			"return cjson.decode('[1,null,3]')[2] == cjson.null",
			"return cjson.decode('0x10')",
			"return cjson.decode('NaN')",
			"return cjson.decode('1e400')",
			"return cjson.decode('-0')",
			"return cjson.decode('01')",
			"return cjson.decode(' true ')",
			"return cjson.decode('[1,2')",
			"return cjson.decode('')",
			"return cjson.decode('{\"a\" 1}')",
			"return cjson.decode('[1] x')",
			"return cjson.decode('{1:2}')",
			"return cjson.decode('\"\\u00e9\\ud83d\\ude00\"')",
			"return cjson.decode('\"\\uZZZZ\"')",
			"return cjson.decode('\"\\q\"')",
			"return cjson.decode('\"abc')",
			"return cjson.decode('[tru]')",
			"return cjson.decode(1)",
			"return cjson.decode()",
			`return cjson.decode("[1]\0garbage")[1]`,
			"return cjson.decode('{\"a\":[]}').a[1]",
			"return cjson.encode(cjson.decode('{\"a\":[1,{\"b\":\"c\"}],\"d\":null}').a)",
			// Redis keeps a setting after the script (locknode does not,
			// docs/redis.md): each script that changes one restores it.
			"return {cjson.encode_sparse_array()}",
			"cjson.encode_sparse_array(true) local r = cjson.encode({[1]=1, [20]=2}) cjson.encode_sparse_array(false) return r",
			"cjson.encode_sparse_array('on', 0) local r = cjson.encode({[1]=1, [20]=2}) cjson.encode_sparse_array('off', 2) return r",
			"cjson.encode_sparse_array(nil, nil, 30) local r = cjson.encode({[1]=1, [20]=2}) cjson.encode_sparse_array(nil, nil, 10) return r",
			"local r = {cjson.encode_sparse_array(true, 3, 4)} cjson.encode_sparse_array(false, 2, 10) return r",
			"return cjson.encode_sparse_array(1)",
			"return cjson.encode_sparse_array(false, -1)",
			"return cjson.encode_sparse_array(true, 1, 2, 3)",
			"return cjson.encode_max_depth()",
			"cjson.encode_max_depth(2) local ok, r = pcall(cjson.encode, {{{1}}}) cjson.encode_max_depth(1000) return {tostring(ok), r}",
			"return cjson.encode_max_depth(0)",
			"return cjson.decode_max_depth()",
			"cjson.decode_max_depth(2) local ok, r = pcall(cjson.decode, '[[[1]]]') cjson.decode_max_depth(1000) return {tostring(ok), r}",
			"return cjson.encode_number_precision()",
			"cjson.encode_number_precision(3) local r = cjson.encode({1/3, 12345, 1e-7}) cjson.encode_number_precision(14) return r",
			"return cjson.encode_number_precision(15)",
			"return cjson.encode_keep_buffer()",
			"local r = cjson.encode_keep_buffer(false) cjson.encode_keep_buffer(true) return r",
			"return cjson.encode_keep_buffer(1)",
			"return cjson.encode_invalid_numbers()",
			"cjson.encode_invalid_numbers('null') local r = cjson.encode({1/0}) cjson.encode_invalid_numbers(false) return r",
			"cjson.encode_invalid_numbers(true) local r = cjson.encode({1/0, -1/0}) cjson.encode_invalid_numbers('off') return r",
			"return cjson.encode_invalid_numbers('x')",
			"return cjson.decode_invalid_numbers()",
			"cjson.decode_invalid_numbers(false) local ok, r = pcall(cjson.decode, '0x10') cjson.decode_invalid_numbers(true) return {tostring(ok), r}",
			"cjson.decode_invalid_numbers('off') local ok, r = pcall(cjson.decode, '[1, 01]') cjson.decode_invalid_numbers('on') return {tostring(ok), r}",
			"local c = cjson.new() c.encode_sparse_array(true) local r = {c.encode({[1]=1, [20]=2}), cjson.encode_sparse_array()} c.encode_sparse_array(false) return r",
			"return {cjson._NAME, cjson._VERSION}",
			"return cjson.version",
		)},
		{name: "cmsgpack", keepGoing: true, steps: errs(
			"return cmsgpack.pack(1, 'a', {1, 2}, {a=1}, 1.5, 0.1, true, nil)",
			"return cmsgpack.pack(string.rep('x', 40), string.rep('y', 300))",
			"return cmsgpack.pack(-33, -200, 300, 70000, 2^40, -2^40, 2^63, 1/0, -0, -2^31, 2^32)",
			"return cmsgpack.pack()",
			"return cmsgpack.pack({1, nil, 3}, {[2]=1}, {}, {x={y={}}})",
			"local t = {} t[1] = t return cmsgpack.pack(t)",
			"local t = {} for i = 1, 20 do t[i] = i end return cmsgpack.pack(t)",
			"return cmsgpack.pack(function() end, cjson.null)",
			"return {cmsgpack.unpack(cmsgpack.pack(1, 'a', {1, 2}, -5, 2^40, 0.25))}",
			"return cmsgpack.unpack(cmsgpack.pack({a={b='c'}})).a.b",
			"return cmsgpack.unpack('')",
			"return cmsgpack.unpack()",
			"return {cmsgpack.unpack_one(cmsgpack.pack(1, 2))}",
			"return {cmsgpack.unpack_one(cmsgpack.pack(1, 2), 1)}",
			"return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2)}",
			"return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2, 2)}",
			"return cmsgpack.unpack_one(cmsgpack.pack(1), 5)",
			"return cmsgpack.unpack(string.char(0xd9, 3, 97, 98, 99))",
			"return cmsgpack.unpack(string.char(0xc4, 2, 97, 98))",
			"return cmsgpack.unpack(string.char(0xc1))",
			"return cmsgpack.unpack(string.char(0xda, 0, 5, 97))",
			"return cmsgpack.unpack(string.char(0x81, 0xc0, 1))",
			"return cmsgpack.unpack(string.char(0x92, 0xc0, 1))[2]",
			"return {cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION}",
		)},
		{name: "struct", keepGoing: true, steps: errs(
			"return struct.pack('>I2', 258)",
			"return struct.pack('<i4', -2)",
			"return struct.pack('bBhHlLTiI', -1, 255, -300, 65000, -5, 7, 9, -70000, 70000)",
			"return struct.pack('>d<f', 1.5, 0.25)",
			"return struct.pack('c3', 'abcdef')",
			"return struct.pack('c0s', 'xyz', 'nul')",
			"return struct.pack('c5', 'ab')",
			"return struct.pack('!4 b i4 b d', 1, 2, 3, 4.5)",
			"return struct.pack('i3', 0x123456)",
			"return struct.pack('i64', 1)",
			"return struct.pack('!3', 1)",
			"return struct.pack('z', 1)",
			"return struct.pack('i', 'x')",
			"return struct.pack('i')",
			"return struct.pack('xx>H', 5)",
			`return {struct.unpack('>I2', '\1\2')}`,
			"return {struct.unpack('<i4', struct.pack('<i4', -2))}",
			"return {struct.unpack('bBhHlLTiI', struct.pack('bBhHlLTiI', -1, 255, -300, 65000, -5, 7, 9, -70000, 70000))}",
			"return {struct.unpack('>d<f', struct.pack('>d<f', 1.5, 0.25))}",
			`return {struct.unpack('s c2', 'abc\0xyz')}`,
			"return {struct.unpack('b c0', struct.pack('b c0', 3, 'abc'))}",
			"return {struct.unpack('c0', 'abc')}",
			"return {struct.unpack('i4', 'ab')}",
			"return {struct.unpack('s', 'abc')}",
			"return {struct.unpack('b', 'ab', 2)}",
			"return {struct.unpack('b', 'ab', 0)}",
			"return {struct.unpack('b', 'ab', 3)}",
			"return {struct.size('i4 d !8 b d')}",
			"return struct.size('s')",
			"return struct.size('c0')",
			"return struct.size('c10 h')",
		),
		},
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

// TestLuaPublishCount: a plain PUBLISH counts the subscribers of the node
// that takes it, as Redis counts its own. Inside a script the count would
// be a node-local fact in the middle of a replicated computation (the
// script could branch on it, and every node runs the script), so
// redis.call('publish', ...) answers 0 on every node; the message still
// reaches every node's subscribers. docs/redis.md, deliberate differences.
func TestLuaPublishCount(t *testing.T) {
	redisAddr := startRedis(t)
	tc := newCluster(t, 3)
	node := (tc.leader(10*time.Second) + 1) % 3
	ch := uniq("chan")
	for _, addr := range []string{redisAddr, tc.resp[node]} {
		sub := dialRESP(t, addr, 2)
		if r, err := sub.do("SUBSCRIBE", ch); err != nil || r.kind != '*' {
			t.Fatalf("SUBSCRIBE on %s: %v %v", addr, r, err)
		}
	}
	seq := sequence{name: "publish", steps: []step{
		cmd("PUBLISH", ch, "plain"),
		eval("return redis.call('publish', KEYS[1], 'scripted')", keys(ch)).deviates(":0",
			"a script's result must be the same on every node; subscribers are per node"),
	}}
	runDiff(t, seq, dialRESP(t, redisAddr, 2), dialRESP(t, tc.resp[node], 2), uniq("p"))
}
