package fsm

import (
	"strconv"
	"testing"

	"github.com/locknode/locknode/fsm/reply"
)

// Compare-and-delete as a Redlock client drives it: Apply of SET NX PX,
// then Apply of EVAL compare-and-delete. Native: the script is a hot one;
// Lua: the same script with a comment appended, so it runs in the VM.
func benchCAD(b *testing.B, script string) {
	t := New(DefaultConfig())
	set := &Command{Op: OpRedis, Args: bargs("SET", "lock", "", "NX", "PX", "30000")}
	ev := &Command{Op: OpEval, Script: []byte(script), KeysB: bargs("lock"), Args: [][]byte{nil}}
	var index uint64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tok := []byte("token-" + strconv.Itoa(i))
		set.Args[2], ev.Args[0] = tok, tok
		index++
		set.Time = int64(index)
		if r := t.Apply(index, set); r.Reply.Kind != 0 && r.Reply.Str != "OK" {
			b.Fatalf("SET NX: %+v", r.Reply)
		}
		index++
		ev.Time = int64(index)
		if r := t.Apply(index, ev); r.Reply.Int != 1 {
			b.Fatalf("CAD: %+v", r.Reply)
		}
	}
}

func BenchmarkCADNative(b *testing.B) { benchCAD(b, hotText(famCAD)) }
func BenchmarkCADLua(b *testing.B)    { benchCAD(b, hotText(famCAD)+"\n-- run in Lua") }

// A Redisson RLock cycle as the bridge proposes it: EVAL (from EVALSHA)
// of the reentrant hash-lock acquire (HINCRBY, PEXPIRE), then the release
// (HINCRBY -1, DEL, PUBLISH, latch SET PX). Both run in Lua. Two Apply
// calls per iteration, as BenchmarkCAD*.
func BenchmarkEvalRedissonCycle(b *testing.B) {
	t := New(DefaultConfig())
	acq := &Command{Op: OpEval, Script: []byte(scriptHashAcquire), KeysB: bargs("rl"), Args: bargs("30000", "")}
	rel := &Command{Op: OpEval, Script: []byte(scriptHashRelease), KeysB: bargs("rl", "redisson_lock__channel:{rl}", "rl:latch"),
		Args: bargs("0", "30000", "", "publish", "1")}
	var index uint64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		owner := []byte("uuid-" + strconv.Itoa(i) + ":1")
		acq.Args[1], rel.Args[2] = owner, owner
		index++
		acq.Time = int64(index) * 10 // the 1 ms latch of the last release has expired
		if r := t.Apply(index, acq); r.Reply.Kind != reply.Nil {
			b.Fatalf("acquire: %+v", r.Reply)
		}
		index++
		rel.Time = int64(index) * 10
		if r := t.Apply(index, rel); r.Reply.Int != 1 {
			b.Fatalf("release: %+v", r.Reply)
		}
	}
}

// The scale workload's fill (bench/ lockbench -scale-fill script): one
// EVAL per log entry doing SET key token NX PX for 100 keys. Allocation
// per entry is what the fill's garbage collections chase, and with it
// how far the heap of a node taking a million locks rises above the
// table (cluster/snapshot.go, cmd/locknode/runtime.go).
func BenchmarkEvalFillScript(b *testing.B) {
	const script = `local n = 0
for i = 1, #KEYS do
  if redis.call('SET', KEYS[i], ARGV[i+1], 'NX', 'PX', ARGV[1]) then n = n + 1 end
end
return n`
	const perEntry = 100
	t := New(DefaultConfig())
	cmd := &Command{Op: OpEval, Script: []byte(script), KeysB: make([][]byte, perEntry), Args: make([][]byte, perEntry+1)}
	cmd.Args[0] = []byte("3600000")
	var index uint64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := 0; k < perEntry; k++ {
			n := int64(i*perEntry + k)
			cmd.KeysB[k] = strconv.AppendInt([]byte("bench/held/"), n, 10)
			cmd.Args[k+1] = strconv.AppendInt([]byte("owner-"), n, 10)
		}
		index++
		cmd.Time = int64(index)
		if r := t.Apply(index, cmd); r.Reply.Int != perEntry {
			b.Fatalf("fill: %+v", r.Reply)
		}
	}
}

// The counters on one key: INCRBYFLOAT computes in 64-bit-significand
// big.Float (Redis' long double), INCRBY in int64, for comparison.
func benchCounter(b *testing.B, args ...string) {
	t := New(DefaultConfig())
	cmd := &Command{Op: OpRedis, Args: bargs(args...)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd.Time = int64(i + 1)
		if r := t.Apply(uint64(i+1), cmd); r.Reply.Kind == reply.Error {
			b.Fatalf("%v: %+v", args, r.Reply)
		}
	}
}

func BenchmarkIncrby(b *testing.B)      { benchCounter(b, "INCRBY", "n", "3") }
func BenchmarkIncrbyfloat(b *testing.B) { benchCounter(b, "INCRBYFLOAT", "n", "0.1") }
