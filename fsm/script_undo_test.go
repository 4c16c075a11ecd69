package fsm

import (
	"bytes"
	"strings"
	"testing"

	"github.com/locknode/locknode/fsm/reply"
)

// undoSetup builds a table with every kind of state a script can touch:
// a native lock held by a session with a queued waiter, a Redis lock, a
// released Redis lock's tombstone, strings (one with an expiry), a hash,
// a set, a sorted set, a list, a semaphore, the fence registry and both
// kinds of cached scripts.
var undoSetup = []Command{
	{Op: OpSessionOpen, Session: "s", TTL: 60_000},
	{Op: OpAcquire, Key: "held", Owner: "o1", Session: "s", LockDelay: 500},
	{Op: OpAcquire, Key: "held", Owner: "o2", TTL: 10_000, Wait: 50_000, ReqID: "w1"},
	{Op: OpAcquire, Key: "sem", Owner: "o1", Mode: Semaphore, Permits: 2, TTL: 10_000},
	rcmd("SET", "rlock", "tok", "NX", "PX", "30000"),
	rcmd("SET", "gone", "tok2", "NX", "PX", "30000"),
	{Op: OpEval, Script: []byte(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`),
		KeysB: bargs("gone"), Args: bargs("tok2")},
	rcmd("SET", "str", "v"),
	rcmd("SET", "n", "10"),
	rcmd("SET", "ttl", "v", "PX", "20000"),
	rcmd("HSET", "h", "f1", "a", "f2", "b"),
	rcmd("SADD", "set", "a", "b"),
	rcmd("ZADD", "z", "1", "a", "2", "b"),
	rcmd("RPUSH", "l", "a", "b", "c", "b"),
	{Op: OpFenceCheck, Key: "res", Token: 2},
	{Op: OpScriptLoad, Script: []byte(`return 'loaded'`)},
	{Op: OpEval, Script: []byte(`return 'old'`)},
	{Op: OpEval, Script: []byte(`if ARGV[2] == 'fail' then redis.call('SET', 'str', 'x') error('boom') end return 'mid'`)},
	{Op: OpEval, Script: []byte(`return 'new'`)},
}

// TestFailedScriptChangesNothing: a script that writes and then fails
// leaves the table exactly as a Tick at the same index and time would,
// with no events, on two tables alike.
func TestFailedScriptChangesNothing(t *testing.T) {
	cfg := Config{MaxScriptSteps: 20_000, MaxScriptMemory: 1 << 20}
	writes := `
		redis.call('SET', 'str', 'changed')
		redis.call('INCR', 'n')
		redis.call('APPEND', 'new', 'x')
		redis.call('PERSIST', 'ttl')
		redis.call('PEXPIRE', 'str', 5)
		redis.call('HSET', 'h', 'f1', 'z', 'f3', 'c')
		redis.call('HDEL', 'h', 'f2')
		redis.call('SADD', 'set', 'c')
		redis.call('SREM', 'set', 'a')
		redis.call('ZADD', 'z', '5', 'a', '3', 'c')
		redis.call('ZREM', 'z', 'b')
		redis.call('LPUSH', 'l', 'x')
		redis.call('LREM', 'l', 0, 'b')
		redis.call('RPOP', 'l')
		redis.call('PUBLISH', 'ch', 'msg')
		redis.call('SET', 'newlock', 'tok3', 'NX', 'PX', '1000')
		redis.call('PEXPIRE', 'rlock', 100000)
		redis.call('DEL', 'held')
		redis.call('PEXPIRE', 'sem', 0)
		redis.call('DEL', 'l')
		redis.call('SET', 'l', 'again')
	`
	tests := []struct {
		name, script string
		sha          bool   // run the script by EVALSHA (it is cached by setup)
		want         string // prefix of the error reply
	}{
		{"runtime error", writes + `error('boom')`, false, "-ERR user_script:"},
		{"nil arithmetic", writes + `return nil + 1`, false, "-ERR user_script:"},
		{"raised error reply", writes + `error(redis.error_reply('MY failure'))`, false, "-MY failure"},
		{"raised status reply", writes + `error({ok = 'fine'})`, false, "-ERR "},
		{"failed redis.call", writes + `redis.call('HSET', 'str', 'f', 'v')`, false, "-WRONGTYPE"},
		{"step budget", writes + `while true do end`, false, "-ERR locknode: script exceeded 20000 VM steps"},
		{"step budget through pcall", writes + `pcall(function() while true do end end) return 1`, false, "-ERR locknode: script exceeded"},
		{"memory limit", writes + `local s = 'x' while true do s = s .. s end`, false, "-ERR locknode: script memory limit exceeded"},
		{"reply too deep", writes + `local t = {} t[1] = t return t`, false, "-ERR reached lua stack limit"},
		{"release of a native lock then error", `redis.call('DEL', 'held') error('x')`, false, "-ERR user_script:"},
		{"compare-and-delete then error", `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end error('x')`, false, "-ERR user_script:"},
		{"grant then error", `redis.call('SET', 'newlock', 'tok3', 'NX', 'PX', '1000') redis.call('SET', 'newlock2', 'tok3', 'NX') error('x')`, false, "-ERR user_script:"},
		{"EVALSHA of a cached script", `if ARGV[2] == 'fail' then redis.call('SET', 'str', 'x') error('boom') end return 'mid'`, true, "-ERR user_script:1: boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var replies []string
			for node := 0; node < 2; node++ {
				a, b := New(cfg), New(cfg)
				for i, c := range undoSetup {
					c.Time = 1000
					ca, cb := c, c
					a.Apply(uint64(i+1), &ca)
					b.Apply(uint64(i+1), &cb)
				}
				idx := uint64(len(undoSetup) + 1)
				before := snap(t, a)
				cmd := Command{Op: OpEval, Script: []byte(tc.script), KeysB: bargs("rlock"), Args: bargs("tok", "fail"), Time: 2000}
				if tc.sha {
					cmd = Command{Op: OpEvalSHA, Key: ScriptSHA([]byte(tc.script)), KeysB: bargs("rlock"), Args: bargs("tok", "fail"), Time: 2000}
				}
				r := a.Apply(idx, &cmd)
				got := fmtReply(r.Reply)
				if !strings.HasPrefix(got, tc.want) {
					t.Fatalf("reply %.300s, want prefix %q", got, tc.want)
				}
				replies = append(replies, got)
				b.Apply(idx, &Command{Op: OpTick, Time: 2000})
				if after := snap(t, a); !bytes.Equal(after, snap(t, b)) {
					t.Fatalf("the failed script changed the table (%d bytes before, %d after)", len(before), len(after))
				}
				if len(r.Events) != 0 {
					t.Fatalf("failed script has events %+v", r.Events)
				}
				if err := checkInvariants(a); err != nil {
					t.Fatal(err)
				}
				if a.MemoryUsed() != b.MemoryUsed() || a.Stats() != b.Stats() || a.ScriptStats() != b.ScriptStats() {
					t.Fatalf("counts differ: %d %+v %+v vs %d %+v %+v", a.MemoryUsed(), a.Stats(), a.ScriptStats(),
						b.MemoryUsed(), b.Stats(), b.ScriptStats())
				}
				// Both tables go on alike: the waiter, the expiries and
				// the highest fence are where they were.
				for i, c := range []Command{
					{Op: OpFenceCheck, Key: "res2", Token: idx},
					{Op: OpTick, Time: 40_000},
					{Op: OpRelease, Key: "held", Owner: "o1"},
					rcmd("SET", "newlock", "t", "NX", "PX", "1000"),
					{Op: OpTick, Time: 100_000},
				} {
					ca, cb := c, c
					ra, rb := a.Apply(idx+1+uint64(i), &ca), b.Apply(idx+1+uint64(i), &cb)
					if fa, fb := fmtResult(ra)+fmtReply(ra.Reply), fmtResult(rb)+fmtReply(rb.Reply); fa != fb {
						t.Fatalf("step %d: %s vs %s", i, fa, fb)
					}
				}
				if !bytes.Equal(snap(t, a), snap(t, b)) {
					t.Fatal("tables diverged after the failed script")
				}
			}
			if replies[0] != replies[1] {
				t.Fatalf("nodes disagree: %q vs %q", replies[0], replies[1])
			}
		})
	}
}

// TestScriptSuccessKeepsWrites: the undo log is for failures only. A
// script that succeeds keeps every write, one that returns an error reply
// (not raised) succeeded, and the waiter of a lock a script releases is
// granted once the script is over.
func TestScriptSuccessKeepsWrites(t *testing.T) {
	tests := []struct {
		name, script string
		want         string
		check        [][]string // command, want
	}{
		{"writes kept", `redis.call('SET', 'str', 'changed') redis.call('HSET', 'h', 'f3', 'c') return 1`, ":1",
			[][]string{{"GET str", `"changed"`}, {"HGET h f3", `"c"`}}},
		{"returned error reply keeps writes", `redis.call('SET', 'str', 'changed') return redis.error_reply('MY no')`, "-MY no",
			[][]string{{"GET str", `"changed"`}}},
		{"caught failure keeps writes", `redis.call('SET', 'str', 'changed') local ok = pcall(redis.call, 'HSET', 'str', 'f', 'v') return ok and 1 or 0`, ":0",
			[][]string{{"GET str", `"changed"`}}},
		{"waiter granted after the script", `redis.call('DEL', 'held') return redis.call('GET', 'held')`, "nil",
			[][]string{{"GET held", `"o2"`}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &rt{tb: t, t: New(DefaultConfig()), now: 1000}
			for _, c := range undoSetup {
				r.apply(&c)
			}
			res := r.apply(&Command{Op: OpEval, Script: []byte(tc.script)})
			if got := fmtReply(res.Reply); got != tc.want {
				t.Fatalf("reply %s, want %s", got, tc.want)
			}
			for _, c := range tc.check {
				if got := fmtReply(r.do(strings.Fields(c[0])...)); got != c[1] {
					t.Errorf("%s = %s, want %s", c[0], got, c[1])
				}
			}
			if err := checkInvariants(r.t); err != nil {
				t.Fatal(err)
			}
		})
	}
	// The grant is an event of the script's entry.
	r := &rt{tb: t, t: New(DefaultConfig()), now: 1000}
	for _, c := range undoSetup {
		r.apply(&c)
	}
	res := r.apply(&Command{Op: OpEval, Script: []byte(`redis.call('DEL', 'held') return 1`)})
	if g := eventsOf(res, EvGranted); len(g) != 1 || g[0].WaiterID != "w1" {
		t.Fatalf("grant events %+v", res.Events)
	}
}

// TestFailedScriptInExec: MULTI/EXEC keeps Redis' semantics (the other
// commands of the block run and stay); only the failed script is undone.
func TestFailedScriptInExec(t *testing.T) {
	r := newRT(t)
	res := r.apply(&Command{Op: OpExec, Multi: [][][]byte{
		bargs("SET", "a", "1"),
		bargs("EVAL", `redis.call('SET', 'b', '1') error('x')`, "0"),
		bargs("EVAL", `redis.call('SET', 'c', '1') return 1`, "0"),
		bargs("SET", "d", "1"),
	}})
	if res.Reply.Kind != reply.Array || len(res.Reply.Arr) != 4 || res.Reply.Arr[1].Kind != reply.Error {
		t.Fatalf("exec reply %s", fmtReply(res.Reply))
	}
	if got := fmtReply(r.do("MGET", "a", "b", "c", "d")); got != `["1" nil "1" "1"]` {
		t.Fatalf("after EXEC: %s", got)
	}
}

// TestFailedScriptNotCached: a failed EVAL is not cached for EVALSHA, and
// a failed EVALSHA leaves the least-recently-used order alone (so the
// same script is evicted next on every node).
func TestFailedScriptNotCached(t *testing.T) {
	cfg := Config{MaxEvalScripts: 2}
	r := &rt{tb: t, t: New(cfg), now: 1000}
	failing := `if ARGV[1] == 'fail' then error('x') end return 1`
	r.eval(`error('never')`, 0)
	if got := fmtReply(r.apply(&Command{Op: OpEvalSHA, Key: ScriptSHA([]byte(`error('never')`))}).Reply); !strings.HasPrefix(got, "-NOSCRIPT") {
		t.Fatalf("failed EVAL cached: %s", got)
	}
	r.eval(failing, 0, "ok") // cached, least recently used
	r.eval(`return 2`, 0)
	r.apply(&Command{Op: OpEvalSHA, Key: ScriptSHA([]byte(failing)), Args: bargs("fail")})
	r.eval(`return 3`, 0) // evicts the least recently used: still the failing one
	if got := fmtReply(r.apply(&Command{Op: OpEvalSHA, Key: ScriptSHA([]byte(failing)), Args: bargs("ok")}).Reply); !strings.HasPrefix(got, "-NOSCRIPT") {
		t.Fatalf("a failed EVALSHA moved its script in the LRU order: %s", got)
	}
	if got := fmtReply(r.apply(&Command{Op: OpEvalSHA, Key: ScriptSHA([]byte(`return 2`))}).Reply); got != ":2" {
		t.Fatalf("wrong script evicted: %s", got)
	}
}

// TestUndoCopyCharged: the undo copy of a big value counts against the
// script's memory budget, so undoing never costs more than it allows.
func TestUndoCopyCharged(t *testing.T) {
	cfg := Config{MaxScriptMemory: 1 << 20}
	r := &rt{tb: t, t: New(cfg), now: 1000}
	big := strings.Repeat("x", 600_000)
	r.do("SET", "a", big)
	r.do("SET", "b", big)
	got := fmtReply(r.eval(`redis.call('APPEND', 'a', 'y') redis.call('APPEND', 'b', 'y') return 1`, 0))
	if !strings.HasPrefix(got, "-ERR locknode: script memory limit exceeded") {
		t.Fatalf("got %.200s", got)
	}
	if got := fmtReply(r.do("STRLEN", "a")); got != ":600000" {
		t.Fatalf("a: %s", got)
	}
	// One copy fits; a second write to the same key copies nothing more.
	if got := fmtReply(r.eval(`redis.call('APPEND', 'a', 'y') redis.call('APPEND', 'a', 'y') return 1`, 0)); got != ":1" {
		t.Fatalf("got %.200s", got)
	}
}

// TestUndoLogReuse: the undo log is reused from script to script, also
// after one that wrote more keys than it keeps room for.
func TestUndoLogReuse(t *testing.T) {
	r := newRT(t)
	steps := []struct{ script, want string }{
		{`for i = 1, 2000 do redis.call('SET', 'k' .. i, 'big') end error('x')`, "-ERR user_script:1: x"},
		{`for i = 1, 3 do redis.call('SET', 'k' .. i, 'kept') end return 1`, ":1"},
		{`for i = 1, 5 do redis.call('SET', 'k' .. i, 'gone') end error('y')`, "-ERR user_script:1: y"},
		{`for i = 1, 2000 do redis.call('DEL', 'k' .. i) end error('z')`, "-ERR user_script:1: z"},
	}
	for _, s := range steps {
		if got := fmtReply(r.eval(s.script, 0)); !strings.HasPrefix(got, s.want) {
			t.Fatalf("%s: %s", s.script, got)
		}
	}
	if got := fmtReply(r.do("MGET", "k1", "k3", "k4", "k2000")); got != `["kept" "kept" nil nil]` {
		t.Fatalf("got %s", got)
	}
	if n := r.t.Stats().Keys; n != 3 {
		t.Fatalf("%d keys", n)
	}
}
