package fsm

import "testing"

// luaErrorCases are scripts whose errors Redis 7 words in Lua 5.1's terms
// (variable names, "near" tokens) with its own "script: <sha>, on
// @user_script:<line>." suffix; clients and people match on these texts.
var luaErrorCases = []string{
	"return 1 +",
	"return (",
	"return 'abc",
	"x = = 2",
	"return x.y",
	"local x; return x.y",
	"return foo()",
	"local t={} return t.a.b",
	"return 1 + nil",
	"local a; return a + 1",
	"local a = {}; return a.b + 1",
	"return {} .. 'x'",
	"local a; return 'x' .. a",
	"error('boom')",
	"error('boom', 0)",
	"error('boom', 2)",
	"error()",
	"error(nil)",
	"error(42)",
	"error({err='MY boom'})",
	"error({err=1})",
	"return redis.error_reply('X y')",
	"error(redis.error_reply('X y'))",
	"local x = 'a' + 1",
	"return #nil",
	"local t = {} t.x.y = 1",
	"return ARGV[1].foo",
	"local s = 'x'; return s:nope()",
	"return string.nope()",
	"return KEYS.x()",
	"local f; f()",
	"local t = {}; t.f()",
	"local t = {}; t:m()",
	"return 1 < 'a'",
	"return {} < {}",
	"return -{}",
	"for i=1,'x' do end",
	"for i='x',1 do end",
	"for i=1,2,{} do end",
	"return redis.call()",
	"return redis.call('nosuchcommand')",
	"return redis.call('get')",
	"x = 5",
	"return y",
	"local t = setmetatable({}, {__index = function(t, k) return k.x end}) return t.a",
	"\nlocal x\n\nreturn x.y",
	"local a = 1\nlocal b = a.c",
	"return math.floor('x')",
	"return string.rep()",
	"return ('x'):rep('y')",
	"return tostring()",
	"return pcall(error, 'x')",
	"local ok, e = pcall(function() local z; return z.q end) return e",
	"local ok, e = pcall(function() error({err='E'}) end) return e.err",
	"return redis.pcall('incr')",
	"return select(-5, 1)",
	"return upval_test",
	"local u; local function f() return u.x end return f()",
}

func TestLuaErrorsDifferential(t *testing.T) {
	rc := startRedis(t)
	var steps []dstep
	for _, s := range luaErrorCases {
		steps = append(steps, ev(s, nil))
	}
	steps = append(steps, c("SET", "k", "notanumber"), ev("return redis.call('incr', KEYS[1])", []string{"k"}),
		ev("redis.call('incr', KEYS[1])\nreturn 1", []string{"k"}))
	// gopher-lua's parser is a yacc grammar: where Lua 5.1 says what it
	// expected, locknode says "unexpected symbol" (README, deliberate
	// differences).
	const cerr = "-ERR Error compiling script (new function): user_script:"
	for _, d := range []struct{ script, table string }{
		{"local = 1", cerr + "1: unexpected symbol near '='"},
		{"return 1 2", cerr + "1: unexpected symbol near '2'"},
		{"for i = 1 do end", cerr + "1: unexpected symbol near 'do'"},
		{"if true then\n", cerr + "2: unexpected symbol near '<eof>'"},
	} {
		st := ev(d.script, nil)
		st.table = d.table
		steps = append(steps, st)
	}
	runDiff(t, rc, diffCase{name: "error texts", steps: steps})
}
