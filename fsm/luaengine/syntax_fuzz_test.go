package luaengine

import (
	"strings"
	"testing"
)

// FuzzLuaSyntax: the Lua 5.1 syntax check runs on every script a node
// compiles, inside Apply: on any input it must return (never panic, never
// recurse without bound) and name a line within the script.
func FuzzLuaSyntax(f *testing.F) {
	for _, s := range syntaxSeeds {
		f.Add(s)
	}
	f.Add("local t = {a = 1, [2] = 3; 4} for k, v in pairs(t) do if k then break end end return t")
	f.Add(strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300))
	f.Add("return [==[\n]==] .. '\\300' --[[ x")
	f.Fuzz(func(t *testing.T, s string) {
		msg := luaSyntaxError([]byte(s))
		if msg == "" {
			return
		}
		if !strings.HasPrefix(msg, luaChunkName+":") {
			t.Fatalf("%q: %q", s, msg)
		}
		if again := luaSyntaxError([]byte(s)); again != msg {
			t.Fatalf("%q: %q then %q", s, msg, again)
		}
	})
}
