package fsm

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user+system CPU time: on a shared machine the
// wall time of a benchmark says more about the neighbours than the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLuaWorstSteps runs, for each kind of expensive step, a script
// that loops until the default step budget (or memory budget) stops it:
// the time per op is how long such a script stalls applies on every node.
// Used to choose DefaultConfig's MaxScriptSteps (bench/results/README.md).
func BenchmarkLuaWorstSteps(b *testing.B) {
	for _, bc := range []struct{ name, script string }{
		{"empty-loop", `while true do end`},
		{"arith", `local n = 0 while true do n = n + 1.5 end`},
		{"concat-short", `local i = 0 while true do i = i + 1 local s = 'k' .. i end`},
		{"hash-insert", `local t = {} local i = 0 while true do i = i + 1 t['k' .. i] = true end`},
		{"array-append", `local t = {} local i = 0 while true do i = i + 1 t[i] = i end`},
		{"new-table", `while true do local t = {1, 2, 3} end`},
		{"closure", `local i = 0 while true do i = i + 1 local f = function() return i end end`},
		{"pcall", `local f = function() end while true do pcall(f) end`},
		{"redis-incr", `while true do redis.call('INCR', 'n') end`},
		{"redis-set-new-keys", `local i = 0 while true do i = i + 1 redis.call('SET', 'k' .. i, 'v') end`},
		{"string-find", `local s = string.rep('a', 1000) while true do string.find(s, 'a-b') end`},
		{"gsub", `local s = string.rep('a', 1000) while true do string.gsub(s, 'a', 'b') end`},
		{"format", `while true do string.format('%99d%99d%99d', 1, 2, 3) end`},
		{"tostring", `local i = 0 while true do i = i + 1 tostring(i) end`},
		{"sort", `local t = {} for i = 1, 5000 do t[i] = (i * 7919) % 5003 end while true do table.sort(t, function(a, b) return a > b end) end`},
		{"unpack", `local t = {} for i = 1, 7000 do t[i] = i end while true do local a = {unpack(t)} end`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := newRT(b)
			cpu0 := cpuTime()
			defer func() {
				b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			}()
			for i := 0; i < b.N; i++ {
				if got := r.eval(bc.script, 0); !got.IsError() {
					b.Fatalf("not stopped: %v", fmtReply(got))
				} else if i == 0 {
					b.Logf("%.70s", got.Str)
				}
			}
		})
	}
}

// BenchmarkExecMax applies one EXEC of DefaultConfig().MaxExecCommands
// commands of a kind: how long the largest MULTI block allowed stalls
// applies.
func BenchmarkExecMax(b *testing.B) {
	n := DefaultConfig().MaxExecCommands
	for _, bc := range []struct {
		name string
		cmd  func(i int) []string
	}{
		{"set-new-keys", func(i int) []string { return []string{"SET", fmt.Sprintf("k%d", i), "v"} }},
		{"set-nx-px-locks", func(i int) []string { return []string{"SET", fmt.Sprintf("l%d", i), "tok", "NX", "PX", "30000"} }},
		{"incr", func(int) []string { return []string{"INCR", "n"} }},
		{"hset", func(i int) []string { return []string{"HSET", "h", fmt.Sprintf("f%d", i), "v"} }},
		{"eval-small", func(i int) []string {
			return []string{"EVAL", "return redis.call('SET', KEYS[1], ARGV[1])", "1", fmt.Sprintf("e%d", i), "v"}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			multi := make([][][]byte, n)
			for i := range multi {
				multi[i] = bargs(bc.cmd(i)...)
			}
			cpu0 := cpuTime()
			defer func() {
				b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			}()
			for i := 0; i < b.N; i++ {
				r := newRT(b)
				if got := r.apply(&Command{Op: OpExec, Multi: multi}).Reply; got.IsError() || len(got.Arr) != n {
					b.Fatalf("%.100s", fmtReply(got))
				}
			}
		})
	}
}
