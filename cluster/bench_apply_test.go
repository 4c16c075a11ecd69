package cluster

import (
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/fsm"
)

// benchCAD is the compare-and-delete release Redis lock clients load.
const benchCAD = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

// BenchmarkApplyBatchRESP is a node's apply work for a Redis client's
// lock cycle without raft or network: SET NX PX, then the
// compare-and-delete EVALSHA, encoded as the bridge proposes them and
// applied through the FSM adapter (decode, table, lock history,
// counters, dispatch, applied index). batch=1 is one worker (every entry
// its own batch), batch=64 a busy leader. One op is one cycle, two
// entries; each worker has its own key. cpu-ns/op is the process's CPU
// time (GC included) per cycle: steadier than ns/op on a shared machine.
func BenchmarkApplyBatchRESP(b *testing.B) {
	for _, batch := range []int{1, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			n := adapterNode(b)
			f := (*fsmAdapter)(n)
			sha := fsm.ScriptSHA([]byte(benchCAD))
			var index uint64
			now := int64(1_700_000_000_000)
			entry := func(c *fsm.Command) *raft.Log {
				index++
				now++
				c.Time = now
				return &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: c.AppendBinary(nil)}
			}
			f.ApplyBatch([]*raft.Log{entry(&fsm.Command{Op: fsm.OpScriptLoad, Script: []byte(benchCAD)})})
			keys := make([][]byte, batch)
			for w := range keys {
				keys[w] = []byte("bench:" + strconv.Itoa(w))
			}
			// A batch holds one worker's SET NX or release each: the
			// 64 workers' SETs commit together, then their releases.
			sets := make([]*raft.Log, batch)
			dels := make([]*raft.Log, batch)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for i := 0; i < b.N; i += batch {
				for w := range batch {
					tok := []byte("t" + strconv.Itoa(w) + "-" + strconv.Itoa(i))
					sets[w] = entry(&fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("SET"), keys[w], tok, []byte("NX"), []byte("PX"), []byte("10000")}})
				}
				for w, r := range f.ApplyBatch(sets) {
					if res := r.(*fsm.Result); res.Reply.Str != "OK" {
						b.Fatalf("SET NX %s: %+v", keys[w], res.Reply)
					}
				}
				for w := range batch {
					tok := []byte("t" + strconv.Itoa(w) + "-" + strconv.Itoa(i))
					dels[w] = entry(&fsm.Command{Op: fsm.OpEvalSHA, Key: sha, KeysB: [][]byte{keys[w]}, Args: [][]byte{tok}})
				}
				for w, r := range f.ApplyBatch(dels) {
					if res := r.(*fsm.Result); res.Reply.Int != 1 {
						b.Fatalf("compare-and-delete %s: %+v", keys[w], res.Reply)
					}
				}
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the CPU time (user + system) this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
