package luaengine

import (
	"testing"

	"github.com/locknode/locknode/fsm/luaengine/luatest"
)

// syntaxSeeds are the fuzz seeds of FuzzLuaSyntax: the scripts of fsm's
// error-text differential test against Redis 7.
var syntaxSeeds = luatest.ErrorScripts()

// TestLuaSyntaxAcceptsLua51: the syntax check runs before every compile,
// so it must take everything Lua 5.1 takes.
func TestLuaSyntaxAcceptsLua51(t *testing.T) {
	for _, s := range []string{
		"",
		"return",
		"return;",
		"local a, b, c = 1, 2 local function f(...) local x, y = ... return select('#', ...) end",
		"local t = {1, 2; 3, a = 1, ['b'] = 2, [f and 1 or 2] = 3, {}, function() end,}",
		"x, y.z, t[1] = 1, 2, 3",
		"local s = [[\nlong]] .. [==[ with ]] inside ]==] .. 'a\\'b' .. \"c\\\"d\" .. '\\65\\066\\0067\\z\\\n'",
		"--[[ block\ncomment ]] --[==[ another ]==] -- line\nreturn 1",
		"return 0x1F + 1e-3 + .5 + 5. + 3E+2 + 0XaB",
		"local o = {} function o.a.b:c(x) return self end function o:m() end",
		"while false do break end repeat local x = 1 until x == 1 for i = 1, 10, 2 do end for k, v in next, {} do end",
		"if a then elseif b then else end do end",
		"return not not -#'x' ^ 2 .. 1 == 2 and 3 or 4 ~= 5 and 6 <= 7 and 8 >= 9 and a < b and c > d",
		"f{1} f'x' f\"y\" f[[z]] o:m{} o:m'x' a.b.c:d(1)(2)[3]:e()",
		"local function f() return function(...) return ... end end return (f())(1)",
		"return ((((((((((1))))))))))",
		"local t = {} t[#t + 1] = 1 return t[#t]",
		"return redis.call('get', KEYS[1]) == ARGV[1]",
		"for i = 1, 2 do local function g() return i end end",
		"local a = {[1]=1;[2]=2}",
		"return -1 - -1",
		"a = function(self, ...) return arg end",
	} {
		if msg := luaSyntaxError([]byte(s)); msg != "" {
			t.Errorf("%q: %s", s, msg)
		}
	}
}
