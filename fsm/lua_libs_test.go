package fsm

import (
	"fmt"
	"strings"
	"testing"
)

// TestLuaLibrariesDeterministic: the libraries and reply conversions that
// walk a table's keys (cjson.encode of an object, cmsgpack.pack of a
// map, a {map=...} or {set=...} reply) must give the same bytes on every
// node. Go's map iteration is random per run, so each script runs on
// several fresh tables and every reply must be identical; the keys are
// inserted out of sorted order so that a sorted walk would show too.
func TestLuaLibrariesDeterministic(t *testing.T) {
	const build = `local t = {} for i = 40, 1, -1 do t['k' .. (i * 7 % 41)] = i end t[1.5] = 'x' `
	for _, script := range []string{
		build + `return cjson.encode(t)`,
		build + `return {map = t}`,
		build + `return {set = t}`,
		build + `local n = {} for k, v in pairs(t) do n[#n + 1] = k end return n`,
		build + `return cjson.encode(cjson.decode(cjson.encode(t)))`,
		build + `return cmsgpack.pack(t)`,
		build + `return cmsgpack.pack(cmsgpack.unpack(cmsgpack.pack(t)))`,
		`redis.setresp(3) redis.call('hset', 'h', 'b', 1, 'a', 2, 'c', 3) return cjson.encode(redis.call('hgetall', 'h').map)`,
	} {
		var first string
		for run := 0; run < 8; run++ {
			r := newRT(t)
			got := fmtReply(r.eval(script, 0))
			if run == 0 {
				first = got
				if len(got) < 20 || got[0] == '-' {
					t.Fatalf("%s: %s", script, got)
				}
				continue
			}
			if got != first {
				t.Fatalf("%s: run %d replied\n%s\nrun 0 replied\n%s", script, run, got, first)
			}
		}
	}
}

// TestLuaLibraryErrors pins the error texts of the libraries where the
// differential suite (compat) cannot reach: locknode's own limits.
func TestLuaLibraryErrors(t *testing.T) {
	for _, tc := range []struct{ script, want string }{
		{`local t = {} local c = t for i = 1, 1100 do c[1] = {} c = c[1] end return cjson.encode(t)`,
			"-ERR user_script:1: Cannot serialise, excessive nesting (1001)"},
		{`return cjson.decode(string.rep('[', 1100))`, "-ERR user_script:1: Found too many nested data structures (1001) at character 1001"},
		{`cjson.null.x = 1`, "-ERR user_script:1: attempt to index field 'null' (a userdata value)"},
		{`cjson.encode = nil`, "-ERR user_script:1: Attempt to modify a readonly table"},
	} {
		r := newRT(t)
		got := fmtReply(r.eval(tc.script, 0))
		if len(got) < len(tc.want) || got[:len(tc.want)] != tc.want {
			t.Errorf("%s:\n got %s\nwant %s...", tc.script, got, tc.want)
		}
	}
}

// TestLuaLibraryMemoryLimit: with the step budget out of the way, what the
// libraries build is still bounded by MaxScriptMemory, on every node at
// the same point (two tables, same reply).
func TestLuaLibraryMemoryLimit(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxScriptSteps = 1 << 40
	cfg.MaxScriptMemory = 8 << 20
	const big = `local s = string.rep('"', 1000000) local t = {} for i = 1, 64 do t[i] = s end `
	for _, script := range []string{
		big + `return #cjson.encode(t)`,
		big + `return #cmsgpack.pack(t)`,
		big + `return #struct.pack(string.rep('c0', 64), unpack(t))`,
		big + `local j = cjson.encode({s}) local n = 0 for i = 1, 64 do n = n + #cjson.decode(j)[1] end return n`,
		big + `local m = cmsgpack.pack(s) local n = {} for i = 1, 64 do n[i] = cmsgpack.unpack(m) end return #n`,
	} {
		var replies []string
		for node := 0; node < 2; node++ {
			r := &rt{tb: t, t: New(cfg), now: 1_000_000}
			replies = append(replies, fmtReply(r.eval(script, 0)))
			if got := fmtReply(r.eval("return cjson.encode({1})", 0)); got != `"[1]"` {
				t.Fatalf("after %s the next script replied %s", script, got)
			}
		}
		want := fmt.Sprintf("-ERR locknode: script memory limit exceeded (%d bytes", cfg.MaxScriptMemory)
		if !strings.HasPrefix(replies[0], want) {
			t.Errorf("%s: %s, want %s...", script, replies[0], want)
		}
		if replies[0] != replies[1] {
			t.Errorf("%s: nodes differ: %s / %s", script, replies[0], replies[1])
		}
	}
}
