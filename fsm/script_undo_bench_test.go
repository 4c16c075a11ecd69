package fsm

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkLuaWorstScripts applies, with the default limits, the worst
// scripts they allow: ones that allocate until the memory limit stops
// them, and ones that write until a limit stops them, so that the undo
// log must restore everything they wrote. ns/op is how long such a script
// stalls applies on every node (bench/results/README.md#lua-step-budget).
func BenchmarkLuaWorstScripts(b *testing.B) {
	big := strings.Repeat("x", 1<<20)
	for _, bc := range []struct {
		name   string
		setup  func(r *rt)
		script string
	}{
		// Stopped by the memory limit.
		{"mem-doubling", nil, `local s = 'x' while true do s = s .. s end`},
		{"mem-1MiB-strings", nil, `local s = string.rep('x', 1000000) local t = {} for i = 1, 2000 do t[i] = s .. i end`},
		{"mem-table-concat", nil, `local s = string.rep('x', 1048576) local t = {} for i = 1, 300 do t[i] = s end return #table.concat(t)`},
		{"mem-redis-replies", func(r *rt) { r.do("SET", "big", big) }, `local t = {} for i = 1, 2000 do t[i] = redis.call('GET', 'big') end`},
		{"mem-hash-growth", nil, `local t = {} for i = 1, 1e7 do t['k' .. i] = true end`},
		{"mem-closures", nil, `local t = {} for i = 1, 1e7 do t[i] = function() return i end end`},
		// Writes undone: the step budget stops them.
		{"undo-set-new-keys", nil, `local i = 0 while true do i = i + 1 redis.call('SET', 'k' .. i, 'v') end`},
		{"undo-set-nx-locks", nil, `local i = 0 while true do i = i + 1 redis.call('SET', 'l' .. i, 'tok', 'NX', 'PX', 30000) end`},
		{"undo-del-locks", func(r *rt) {
			for i := 0; i < 10_000; i++ {
				r.index++ // not r.do: its memory recount per command is quadratic here
				c := rcmd("SET", fmt.Sprintf("d%d", i), "tok", "NX", "PX", "3600000")
				c.Time = r.now
				r.t.Apply(r.index, &c)
			}
		}, `local i = 0 while true do i = i + 1 redis.call('DEL', 'd' .. i) end`},
		{"undo-hset-fields", nil, `local i = 0 while true do i = i + 1 redis.call('HSET', 'h', 'f' .. i, 'v') end`},
		// Writes undone: the copy of a value just under the memory limit.
		{"undo-big-hash-copy", func(r *rt) {
			for i := 0; i < 200; i++ {
				args := []string{"HSET", "bigh"}
				for j := 0; j < 1000; j++ {
					args = append(args, fmt.Sprintf("f%d.%d", i, j), "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
				}
				r.do(args...)
			}
		}, `redis.call('HSET', 'bigh', 'new', 'v') error('fail after the copy')`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := newRT(b)
			if bc.setup != nil {
				bc.setup(r)
			}
			mem0, stats0 := r.t.MemoryUsed(), r.t.Stats()
			if v := r.t.keys["bigh"]; v != nil {
				b.Logf("hash of %d accounted bytes", valueBytes("bigh", v))
			}
			cpu0 := cpuTime()
			defer func() {
				b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			}()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if got := r.eval(bc.script, 0); !got.IsError() {
					b.Fatalf("not stopped: %v", fmtReply(got))
				} else if i == 0 {
					b.Logf("%.90s", got.Str)
				}
			}
			b.StopTimer()
			if r.t.MemoryUsed() != mem0 || r.t.Stats() != stats0 {
				b.Fatal("a failed script changed the table")
			}
		})
	}
}
