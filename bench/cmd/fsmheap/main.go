// Command fsmheap measures the live heap of an fsm.Table holding n locks
// (SET key token NX PX, as the scale workload takes them: one per command,
// or -eval of them per EVAL script) and the size of its snapshot, in one
// process: the part of a node's RSS that is the table itself. With -heapprofile it writes a heap profile (go tool pprof).
// Snapshot and restore are timed in wall time and in CPU time of the
// process (user+sys, GC workers included), which the load of other
// processes on a shared machine disturbs less; restored_heap is the live
// heap of the restored table alone.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/fsm/reply"
)

// fillScript is cmd/lockbench's: one lock per key, SET KEYS[i] ARGV[i+1]
// NX PX ARGV[1].
const fillScript = `local n = 0
for i = 1, #KEYS do
  if redis.call('SET', KEYS[i], ARGV[i+1], 'NX', 'PX', ARGV[1]) then n = n + 1 end
end
return n`

func main() {
	n := flag.Int("n", 1_000_000, "locks to hold")
	prof := flag.String("heapprofile", "", "write a heap profile here")
	cpuprof := flag.String("restoreprofile", "", "write a CPU profile of Restore here")
	eval := flag.Int("eval", 0, "take the locks by EVAL scripts of this many SET NX PX each (the scale workload's fill); 0 = one SET NX PX per command")
	fromFile := flag.Bool("restore-from-file", false, "restore from the snapshot written to a temporary file (an *os.File, as raft hands it over) instead of from memory")
	flag.Parse()
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	base := heap()
	t := fsm.New(fsm.DefaultConfig())
	now := time.Now().UnixMilli()
	start := time.Now()
	var index uint64
	apply := func(cmd *fsm.Command) {
		index++
		r := t.Apply(index, cmd)
		if r.Err == nil && r.Reply.Kind == reply.Error {
			r.Err = errors.New(r.Reply.Str)
		}
		if r.Err != nil {
			fmt.Fprintln(os.Stderr, "apply:", r.Err)
			os.Exit(1)
		}
	}
	ttl := []byte(strconv.Itoa(3600_000))
	for k := 0; k < *n; {
		if *eval > 0 {
			// One EVAL of up to -eval SET NX PX, as lockbench's scale
			// workload fills (cmd/lockbench/scale.go fillScript).
			cmd := &fsm.Command{Op: fsm.OpEval, Time: now, Script: []byte(fillScript), Args: [][]byte{ttl}}
			for ; k < *n && len(cmd.KeysB) < *eval; k++ {
				cmd.KeysB = append(cmd.KeysB, fmt.Appendf(nil, "bench/held/%07d", k))
				cmd.Args = append(cmd.Args, fmt.Appendf(nil, "owner-%07d", k))
			}
			apply(cmd)
			continue
		}
		apply(&fsm.Command{Op: fsm.OpRedis, Time: now, Args: [][]byte{
			[]byte("SET"), fmt.Appendf(nil, "bench/held/%07d", k), fmt.Appendf(nil, "owner-%07d", k),
			[]byte("NX"), []byte("PX"), ttl}})
		k++
	}
	applyTime := time.Since(start)
	live := heap() - base
	st := t.Stats()
	if *prof != "" {
		// The table as the applies built it.
		f, err := os.Create(*prof)
		if err == nil {
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	var buf bytes.Buffer
	start = time.Now()
	cpu0 := cpuTime()
	if err := t.Snapshot(&buf); err != nil {
		fmt.Fprintln(os.Stderr, "snapshot:", err)
		os.Exit(1)
	}
	snapTime, snapCPU := time.Since(start), cpuTime()-cpu0
	snapLen := buf.Len()
	start = time.Now()
	t2 := fsm.New(fsm.DefaultConfig())
	if *cpuprof != "" {
		if f, err := os.Create(*cpuprof); err == nil {
			_ = pprof.StartCPUProfile(f)
			defer f.Close()
		}
	}
	var src io.Reader = bytes.NewReader(buf.Bytes())
	if *fromFile {
		f, err := os.CreateTemp("", "fsmheap-snap-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer os.Remove(f.Name())
		if _, err := f.Write(buf.Bytes()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		src = f
	}
	start = time.Now()
	cpu0 = cpuTime()
	err := t2.Restore(src)
	restoreCPU := cpuTime() - cpu0
	if *cpuprof != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "restore:", err)
		os.Exit(1)
	}
	restoreTime := time.Since(start)
	if st2 := t2.Stats(); st2 != st {
		fmt.Fprintf(os.Stderr, "restored stats %+v, want %+v\n", st2, st)
		os.Exit(1)
	}
	// The restored table alone: the original and the snapshot go.
	t, buf = nil, bytes.Buffer{}
	src = nil
	restored := heap() - base
	fmt.Printf("locks=%d keys=%d live_heap=%.1fMB (%.0f B/lock) apply=%v snapshot=%.1fMB in %v (cpu %v) restore=%v (cpu %v) restored_heap=%.0f B/lock\n",
		st.Locks, st.Keys, float64(live)/(1<<20), float64(live)/float64(*n), applyTime.Round(time.Millisecond),
		float64(snapLen)/(1<<20), snapTime.Round(time.Millisecond), snapCPU.Round(time.Millisecond),
		restoreTime.Round(time.Millisecond), restoreCPU.Round(time.Millisecond), float64(restored)/float64(*n))
	runtime.KeepAlive(t2)
}

// cpuTime is the CPU time (user+sys) the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
