// Command fsmheap measures the live heap of an fsm.Table holding n locks
// (SET key token NX PX, as the scale workload takes them) and the size of
// its snapshot, in one process: the part of a node's RSS that is the
// table itself. With -heapprofile it writes a heap profile (go tool pprof).
// Snapshot and restore are timed in wall time and in CPU time of the
// process (user+sys, GC workers included), which the load of other
// processes on a shared machine disturbs less; restored_heap is the live
// heap of the restored table alone.
package main

import (
	"bytes"
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
)

func main() {
	n := flag.Int("n", 1_000_000, "locks to hold")
	prof := flag.String("heapprofile", "", "write a heap profile here")
	cpuprof := flag.String("restoreprofile", "", "write a CPU profile of Restore here")
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
	for k := 0; k < *n; k++ {
		cmd := &fsm.Command{Op: fsm.OpRedis, Time: now, Args: [][]byte{
			[]byte("SET"), fmt.Appendf(nil, "bench/held/%07d", k), fmt.Appendf(nil, "owner-%07d", k),
			[]byte("NX"), []byte("PX"), []byte(strconv.Itoa(3600_000))}}
		if r := t.Apply(uint64(k+1), cmd); r.Err != nil {
			fmt.Fprintln(os.Stderr, "apply:", r.Err)
			os.Exit(1)
		}
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
