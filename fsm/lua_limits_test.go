package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm/reply"
)

// luaBombs are scripts that, without the memory and step budgets, grow a
// node to gigabytes or stall it for minutes in one entry. Each must be
// refused with a limit error, identically on two tables, and leave the
// node able to run the next script. A failed script changes nothing, also
// the writes it made before it failed (the last two cases).
var luaBombs = []struct {
	name, script string
	want         string // prefix of the error reply
}{
	{"string.rep huge", `return #string.rep('x', 1e9)`, "-ERR user_script:1: string.rep result longer than MaxValueBytes"},
	{"string.rep under the value cap, in a table", `local t = {} for i = 1, 2000 do t[i] = string.rep('x', 1000000) .. i end return #t`, "-ERR locknode: script memory limit exceeded"},
	{"doubling", `local s = 'x' while true do s = s .. s end`, "-ERR locknode: script memory limit exceeded"},
	{"2000 x 1 MiB concat into a table", `local s = string.rep('x', 1000000) local t = {} for i = 1, 2000 do t[i] = s .. i end return #t`, "-ERR locknode: script memory limit exceeded"},
	{"table.concat of 300 x 1 MiB", `local s = string.rep('x', 1048576) local t = {} for i = 1, 300 do t[i] = s end return #table.concat(t)`, "-ERR locknode: script memory limit exceeded"},
	{"table growth with numbers", `local t = {} local i = 0 while true do i = i + 1 t[i] = i end`, "-ERR locknode: script"},
	{"sparse array index", `local t = {} t[60000000] = 1 return #t`, "-ERR locknode: script memory limit exceeded"},
	{"hash growth", `local t = {} for i = 1, 1e7 do t['k' .. i] = true end`, "-ERR locknode: script"},
	{"string.format wide", `local f = string.rep('%99d', 200) local s = '' for i = 1, 1e6 do s = s .. string.format(f, unpack({}, 1, 200)) end`, "-ERR"},
	{"string.format of a big string many times", `local s = string.rep('x', 1000000) return #string.format(string.rep('%s', 1000), unpack((function() local t = {} for i = 1, 1000 do t[i] = s end return t end)()))`, "-ERR locknode: script memory limit exceeded"},
	{"gsub blow-up", `local s = string.rep('x', 100000) return #string.gsub(s, 'x', string.rep('%0', 500))`, "-ERR locknode: script"},
	{"gsub quadratic", `local s = string.rep('x', 1000000) return #string.gsub(s, 'x', 'y')`, "-ERR locknode: script"},
	{"pattern backtracking", `local s = string.rep('a', 100000) return string.find(s, '.-.-.-.-b')`, "-ERR locknode: script exceeded"},
	{"deep recursion", `local function f(n) return 1 + f(n + 1) end return f(1)`, "-ERR"},
	{"closures", `local t = {} for i = 1, 1e7 do t[i] = function() return i end end`, "-ERR locknode: script"},
	{"pcall does not catch the memory limit", `local ok = pcall(function() local s = 'x' while true do s = s .. s end end) return 'survived'`, "-ERR locknode: script memory limit exceeded"},
	{"pcall does not catch the step budget", `pcall(function() while true do end end) return 'survived'`, "-ERR locknode: script exceeded"},
	{"loadstring of a big chunk", `local src = 'return ' .. string.rep('1+', 400000) .. '1' return loadstring(src)()`, "-ERR locknode: script memory limit exceeded"},
	{"redis.call replies kept", `redis.call('SET', 'big', string.rep('x', 1000000)) local t = {} for i = 1, 2000 do t[i] = redis.call('GET', 'big') end return #t`, "-ERR locknode: script memory limit exceeded"},
	{"cjson.encode of 300 x 1 MB of quotes", `local s = string.rep('"', 1000000) local t = {} for i = 1, 300 do t[i] = s end return #cjson.encode(t)`, "-ERR locknode: script"},
	{"cjson.encode of a wide table", `local t = {} for i = 1, 1e7 do t[i] = i end return #cjson.encode(t)`, "-ERR locknode: script"},
	{"cjson.decode of a long array", `return #cjson.decode('[' .. string.rep('1,', 4e5) .. '1]')`, "-ERR locknode: script"},
	{"cjson.decode of long strings", `local s = '"' .. string.rep('x', 1000000) .. '"' local t = {} for i = 1, 300 do t[i] = cjson.decode(s) end return #t`, "-ERR locknode: script"},
	{"cmsgpack.pack of 300 x 1 MB", `local s = string.rep('x', 1000000) local t = {} for i = 1, 300 do t[i] = s end return #cmsgpack.pack(t)`, "-ERR locknode: script"},
	{"cmsgpack.unpack of nested arrays", `return cmsgpack.unpack(string.rep(string.char(0x91), 100000) .. string.char(1))`, "-ERR user_script:1: stack overflow"},
	{"struct.pack of 1000 x 1 MB", `local s = string.rep('x', 1000000) local t = {} for i = 1, 1000 do t[i] = s end return #struct.pack(string.rep('c0', 1000), unpack(t))`, "-ERR locknode: script"},
	{"struct.unpack of many results", `return select('#', struct.unpack(string.rep('b', 100000), string.rep('x', 100000)))`, "-ERR user_script:1: stack overflow"},
	{"write then bomb", `redis.call('SET', 'k', 'changed') redis.call('DEL', 'keep') local s = 'x' while true do s = s .. s end`, "-ERR locknode: script memory limit exceeded"},
	{"write then spin", `redis.call('SET', 'k', 'changed') redis.call('HSET', 'h', 'f', 'changed') while true do end`, "-ERR locknode: script exceeded"},
}

func TestLuaBombs(t *testing.T) {
	for _, tc := range luaBombs {
		t.Run(tc.name, func(t *testing.T) {
			var replies, states []string
			for node := 0; node < 2; node++ {
				r := newRT(t)
				r.do("SET", "k", "v")
				r.do("SET", "keep", "1")
				r.do("HSET", "h", "f", "v")
				before := fmtReply(r.do("MGET", "k", "keep", "big"))
				start := time.Now()
				got := fmtReply(r.eval(tc.script, 0))
				if d := time.Since(start); d > 20*time.Second {
					t.Errorf("took %v", d)
				}
				if !strings.HasPrefix(got, tc.want) {
					t.Fatalf("reply %.200s, want prefix %q", got, tc.want)
				}
				if after := fmtReply(r.do("MGET", "k", "keep", "big")); after != before {
					t.Errorf("state changed by a failed script: %s -> %.100s", before, after)
				}
				if got := fmtReply(r.eval(`return redis.call('INCR', 'n')`, 0)); got != ":1" {
					t.Errorf("next script: %s", got)
				}
				replies = append(replies, got)
				states = append(states, fmtReply(r.do("MGET", "k", "keep", "n", "h")), fmtReply(r.do("HGET", "h", "f")))
			}
			if replies[0] != replies[1] || states[0] != states[2] || states[1] != states[3] {
				t.Errorf("nodes disagree: %v %v", replies, states)
			}
		})
	}
}

// TestLuaMemoryBudgetHeap checks the point of the budget: the Go heap a
// bomb leaves live stays within a small multiple of MaxScriptMemory.
func TestLuaMemoryBudgetHeap(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxScriptMemory = 8 << 20
	r := &rt{tb: t, t: New(cfg), now: 1000}
	var peak uint64
	for _, tc := range luaBombs {
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r.eval(tc.script, 0)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > peak {
			peak = d
		}
		// TotalAlloc counts every byte allocated, garbage included: an
		// upper bound on what the script could have held at once.
		if d := after.TotalAlloc - before.TotalAlloc; d > 200<<20 {
			t.Errorf("%s: allocated %d MiB under an 8 MiB budget", tc.name, d>>20)
		}
	}
	t.Logf("largest allocation total of one bomb: %d MiB", peak>>20)
}

func TestLuaMemoryBudgetOrdinaryScripts(t *testing.T) {
	r := newRT(t)
	for _, tc := range []struct{ script, want string }{
		{`local t = {} for i = 1, 10000 do t[i] = 'v' .. i end return #t`, ":10000"},
		{`local s = string.rep('x', 1000000) return #(s .. s)`, ":2000000"},
		{`return #table.concat({string.rep('a', 100), 'b'}, ',')`, ":102"},
		{`local ok, err = pcall(error, 'x') return tostring(ok)`, `"false"`},
		{`return string.format('%5.2f|%s|%d', 3.14159, 'x', 42)`, `" 3.14|x|42"`},
		{`return (string.gsub('hello world', 'o', '0'))`, `"hell0 w0rld"`},
		{`return (string.gsub('abc', '', '-'))`, `"-a-b-c-"`},
		{`return (string.gsub('hello', '(l)(l)', '%2%1'))`, `"hello"`},
		{`return (string.gsub('a,b,,c', ',', {[',']='; '}))`, `"a; b; ; c"`},
		{`return (string.gsub('abc', '%w', function(c) return c:upper() .. '.' end))`, `"A.B.C."`},
		{`return error('50%')`, "-ERR user_script:1: 50% script: "},
	} {
		if got := fmtReply(r.eval(tc.script, 0)); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: got %.100s, want %s", tc.script, got, tc.want)
		}
	}
}

func TestLuaMemoryBudgetConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxScriptMemory = -1
	if cfg.Validate() == nil {
		t.Fatal("negative MaxScriptMemory accepted")
	}
	cfg.MaxScriptMemory = 1 << 20
	r := &rt{tb: t, t: New(cfg), now: 1000}
	got := fmtReply(r.eval(`return #string.rep('x', 600000) .. string.rep('y', 600000)`, 0))
	want := fmt.Sprintf("-ERR locknode: script memory limit exceeded (%d bytes, MaxScriptMemory)", 1<<20)
	if !strings.HasPrefix(got, want) {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// TestApplyTotal: a command whose application panics is refused, the
// table keeps serving, and the same entry gives the same refusal on
// another table.
func TestApplyTotal(t *testing.T) {
	var errs []string
	for node := 0; node < 2; node++ {
		r := newRT(t)
		r.do("SET", "k", "v")
		r.index++
		res := r.t.Apply(r.index, nil) // a nil command: applying it panics
		if !errors.Is(res.Err, ErrBadCommand) || res.Index != r.index {
			t.Fatalf("got %+v", res)
		}
		errs = append(errs, res.Err.Error())
		if got := fmtReply(r.do("GET", "k")); got != `"v"` {
			t.Fatalf("after the panic: %s", got)
		}
		if got := fmtReply(r.eval(`return redis.call('INCR', 'n')`, 0)); got != ":1" {
			t.Fatalf("script after the panic: %s", got)
		}
	}
	if errs[0] != errs[1] {
		t.Fatalf("tables disagree: %q vs %q", errs[0], errs[1])
	}
	if _, err := DecodeCommand([]byte{cmdVersion, byte(OpEval), 0xff, 0xff, 0xff}); err == nil {
		t.Fatal("garbage decoded")
	}
}

// FuzzLuaLimits runs generated Lua through two tables with small limits:
// no panic, and the same reply and the same snapshot on both. A script
// that failed (an error reply, not caught in Lua) must leave the snapshot
// byte for byte as a Tick at the same index would. The seeds are the
// bombs and a few ordinary scripts; the fuzzer mutates their text.
func FuzzLuaLimits(f *testing.F) {
	for _, b := range luaBombs {
		f.Add(b.script, "a")
	}
	for _, s := range []string{
		`return redis.call('SET', KEYS[1], ARGV[1])`,
		`local t = {} for i = 1, 100 do t[#t + 1] = i .. ARGV[1] end return table.concat(t, ',')`,
		`return {pcall(string.rep, 'x', -1)}`,
		`local s = ARGV[1] for i = 1, 20 do s = s .. s end return #s`,
		`return string.gsub(ARGV[1], '(%w+)', '%1 %1')`,
		`local t = setmetatable({}, {__index = function(t, k) return k .. k end}) return t.abc`,
		`local f = function(...) return select('#', ...) end return f(unpack({1, 2, 3}))`,
		`return redis.pcall('INCR', KEYS[1])`,
		`redis.call('SET', KEYS[1], ARGV[1]) redis.call('HSET', 'h', 'f', ARGV[1]) error(ARGV[1])`,
		`redis.call('DEL', 'lk') redis.call('ZADD', 'z', 1, ARGV[1]) redis.call('PUBLISH', 'c', 'm') error(redis.error_reply('X'))`,
		`redis.call('SET', 'lk2', 't', 'NX', 'PX', 100) redis.call('RPUSH', 'l', ARGV[1]) while true do end`,
		`redis.call('PEXPIRE', 'lk', 0) redis.call('LPOP', 'l') local s = ARGV[1] while true do s = s .. s end`,
	} {
		f.Add(s, "b")
	}
	cfg := DefaultConfig()
	cfg.MaxScriptSteps = 20_000
	cfg.MaxScriptMemory = 1 << 20
	cfg.MaxValueBytes = 1 << 16
	f.Fuzz(func(t *testing.T, script, arg string) {
		if len(script) > 4096 || len(arg) > 4096 {
			return
		}
		var replies [2]string
		var snaps [2][]byte
		for i := range replies {
			r := &rt{tb: t, t: New(cfg), now: 1000}
			r.do("SET", "k", "v")
			r.do("RPUSH", "l", "a", "b")
			r.apply(&Command{Op: OpAcquire, Key: "lk", Owner: "o", TTL: 5000})
			r.apply(&Command{Op: OpAcquire, Key: "lk", Owner: "o2", TTL: 5000, Wait: 5000, ReqID: "w"})
			// The twin gets a Tick where r gets the script.
			twin := &rt{tb: t, t: New(cfg), now: 1000}
			for _, c := range []Command{rcmd("SET", "k", "v"), rcmd("RPUSH", "l", "a", "b"),
				{Op: OpAcquire, Key: "lk", Owner: "o", TTL: 5000},
				{Op: OpAcquire, Key: "lk", Owner: "o2", TTL: 5000, Wait: 5000, ReqID: "w"}} {
				twin.apply(&c)
			}
			twin.apply(&Command{Op: OpTick})
			res := r.apply(&Command{Op: OpEval, Script: []byte(script), KeysB: bargs("k"), Args: bargs(arg)})
			replies[i] = fmtReply(res.Reply)
			if res.Reply.Kind == reply.Error && r.t.undo.failed {
				if !bytes.Equal(snap(t, r.t), snap(t, twin.t)) {
					t.Fatalf("failed script %q (%.200s) changed the table", script, replies[i])
				}
				if len(res.Events) != 0 {
					t.Fatalf("failed script %q has events %+v", script, res.Events)
				}
			}
			// The next script must run whatever the first did.
			if got := fmtReply(r.eval(`return redis.call('INCR', 'after')`, 0)); !strings.HasPrefix(got, ":") && !strings.Contains(got, "WRONGTYPE") {
				t.Fatalf("script after %q: %s", script, got)
			}
			var buf bytes.Buffer
			if err := r.t.Snapshot(&buf); err != nil {
				t.Fatal(err)
			}
			snaps[i] = buf.Bytes()
		}
		if replies[0] != replies[1] {
			t.Fatalf("replies differ for %q: %q vs %q", script, replies[0], replies[1])
		}
		if !bytes.Equal(snaps[0], snaps[1]) {
			t.Fatalf("snapshots differ for %q", script)
		}
	})
}
