package fsm

import (
	"strings"
	"testing"
)

func TestLuaNumericForStringBounds(t *testing.T) {
	for _, tc := range []struct{ script, want string }{
		{`local s = "" for i = "3", 1, -1 do s = s .. i end return s`, `"321"`},
		{`local n = 0 for i = 1, "4" do n = n + i end return n`, ":10"},
		{`local n = 0 for i = 1, 10, "5" do n = n + 1 end return n`, ":2"},
		{`local n = 0 for i = " 0x2 ", 3 do n = n + 1 end return n`, ":2"},
		{`local n = 0 for i = ARGV[1], 1, -1 do n = n + i end return n`, ":6"}, // ARGV[1] = "3"
		// Nested in a function and in a loop body: still converted.
		{`local function f(c) local n = 0 for i = c, 1, -1 do n = n + 1 end return n end
		  local t = 0 for _, v in ipairs({"2", "3"}) do t = t + f(v) end return t`, ":5"},
	} {
		r := newRT(t)
		if got := fmtReply(r.eval(tc.script, 0, "3")); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.script, got, tc.want)
		}
	}
	r := newRT(t)
	if got := fmtReply(r.eval(`for i = "x", 1 do end`, 0)); !strings.Contains(got, "'for' initial value must be a number") {
		t.Errorf("non-numeric init: %s", got)
	}
}

func TestLuaStepBudget(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxScriptSteps = 10_000
	for _, script := range []string{
		`while true do end`,
		`local function f() return f() end return f()`,
		`while true do pcall(function() while true do end end) end`,
		`redis.call('SET', 'before', '1') while true do redis.call('INCR', 'n') end`,
	} {
		var first string
		var states []string
		for node := 0; node < 2; node++ {
			r := &rt{tb: t, t: New(cfg), now: 1000}
			got := fmtReply(r.eval(script, 0))
			if !strings.HasPrefix(got, "-ERR locknode: script exceeded 10000 VM steps") {
				t.Fatalf("%s: %s", script, got)
			}
			if node == 0 {
				first = got
			} else if got != first {
				t.Fatalf("%s: nodes disagree: %s vs %s", script, first, got)
			}
			states = append(states, fmtReply(r.do("MGET", "before", "n")))
		}
		if states[0] != states[1] {
			t.Fatalf("%s: states differ %v", script, states)
		}
	}
	// Writes made before the failure are undone (script_undo.go).
	r := &rt{tb: t, t: New(cfg), now: 1000}
	r.eval(`redis.call('SET', 'before', '1') while true do end`, 0)
	if got := fmtReply(r.do("GET", "before")); got != "nil" {
		t.Fatalf("write before the budget ran out: %s", got)
	}
	// A script well under the budget is unaffected.
	if got := fmtReply(r.eval(`local n = 0 for i = 1, 1000 do n = n + i end return n`, 0)); got != ":500500" {
		t.Fatalf("bounded loop: %s", got)
	}
}

func TestLuaSandbox(t *testing.T) {
	r := newRT(t)
	for _, tc := range []struct{ script, want string }{
		{`return type(os)`, "nonexistent global variable 'os'"},
		{`return type(io)`, "nonexistent global variable 'io'"},
		{`return type(debug)`, "nonexistent global variable 'debug'"},
		{`return type(dofile)`, "nonexistent global variable 'dofile'"},
		{`return type(require)`, "nonexistent global variable 'require'"},
		{`return type(setfenv)`, "nonexistent global variable 'setfenv'"},
		{`x = 1`, "Attempt to modify a readonly table"},
		{`redis = nil`, "Attempt to modify a readonly table"},
		{`rawset(_G, "x", 1)`, "Attempt to modify a readonly table"},
		{`function f() end`, "Attempt to modify a readonly table"},
		{`setmetatable(_G, {})`, "Attempt to modify a readonly table"},
		{`return string.rep("x", 2000000)`, "string.rep result longer than MaxValueBytes"},
	} {
		if got := fmtReply(r.eval(tc.script, 0)); !strings.Contains(got, tc.want) || !strings.HasPrefix(got, "-ERR") {
			t.Errorf("%s: got %s, want an error containing %q", tc.script, got, tc.want)
		}
	}
	for _, tc := range []struct{ script, want string }{
		{`return tostring({}) .. " " .. tostring(print == nil)`, "nonexistent"},
		{`local a, b = {}, {} return {tostring(a), tostring(b), tostring(a)}`, `["table: 0x00000001" "table: 0x00000002" "table: 0x00000001"]`},
		{`return tostring(setmetatable({}, {__tostring = function() return "custom" end}))`, `"custom"`},
		{`return collectgarbage("count")`, ":0"},
		{`return {math.random(1000), math.random(1000)}`, "[:171 :750]"},
		{`math.randomseed(7) local a = math.random(1000) math.randomseed(7) return a == math.random(1000)`, ":1"},
		{`local t = {} t[1] = t return t`, "-ERR reached lua stack limit"},
		{`return string.rep("ab", 3)`, `"ababab"`},
	} {
		got := fmtReply(r.eval(tc.script, 0))
		if tc.want == "nonexistent" {
			if !strings.Contains(got, tc.want) {
				t.Errorf("%s: got %s", tc.script, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.script, got, tc.want)
		}
	}
	// The same script gives the same reply on every node (a fresh state each time).
	a, b := newRT(t), newRT(t)
	a.eval(`return tostring({})`, 0)
	for _, x := range []*rt{a, b} {
		if got := fmtReply(x.eval(`return {tostring({}), math.random(50)}`, 0)); got != `["table: 0x00000001" :9]` {
			t.Errorf("fresh state: %s", got)
		}
	}
}

func TestLuaLocksViaScripts(t *testing.T) {
	r := newRT(t)
	// A script's SET NX takes a lock exactly like the command does.
	if got := fmtReply(r.eval(`return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', 1000)`, 1, "k", "tok")); got != "+OK" {
		t.Fatal(got)
	}
	if v := r.t.keys["k"]; v == nil || v.Kind() != KindLock {
		t.Fatalf("script SET NX made %+v", v)
	}
	if got := fmtReply(r.eval(`return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), redis.call('TYPE', KEYS[1])}`, 1, "k")); got != `["tok" :1000 +string]` {
		t.Fatal(got)
	}
	if got := fmtReply(r.eval(`return redis.call('HSET', KEYS[1], 'f', 'v')`, 1, "k")); !strings.HasPrefix(got, "-WRONGTYPE") {
		t.Fatal(got)
	}
}
