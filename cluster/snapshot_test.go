package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/fsm"
)

// adapterNode is a Node with only what the FSM adapter uses: no raft,
// no transport. Tests drive ApplyBatch, Snapshot and Restore as raft
// would.
func adapterNode(t testing.TB) *Node {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ID = "snap"
	cfg.DataDir = t.TempDir()
	cfg.Logger = hclog.NewNullLogger()
	cfg = cfg.withDefaults()
	n := newNode(cfg, "snap-")
	return n
}

// setNXLogs returns raft entries from index first on, each one
// SET key owner NX PX 1h of keys [from, from+count).
func setNXLogs(t testing.TB, first uint64, from, count, perEntry int) []*raft.Log {
	t.Helper()
	var logs []*raft.Log
	idx := first
	script := []byte("for i = 1, #KEYS do redis.call('SET', KEYS[i], ARGV[1] .. KEYS[i], 'NX', 'PX', 3600000) end return 1")
	for k := from; k < from+count; k += perEntry {
		var cmd *fsm.Command
		if perEntry == 1 {
			cmd = &fsm.Command{Op: fsm.OpRedis, Time: 1_000_000, Args: [][]byte{[]byte("SET"),
				fmt.Appendf(nil, "held/%07d", k), fmt.Appendf(nil, "owner-%07d", k), []byte("NX"), []byte("PX"), []byte("3600000")}}
		} else {
			// As the bench fills: one script entry takes perEntry locks.
			cmd = &fsm.Command{Op: fsm.OpEval, Time: 1_000_000, Script: script, Args: [][]byte{[]byte("owner-")}}
			for j := k; j < min(k+perEntry, from+count); j++ {
				cmd.KeysB = append(cmd.KeysB, fmt.Appendf(nil, "held/%07d", j))
			}
		}
		data, err := cmd.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, &raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: data})
		idx++
	}
	return logs
}

func applyAll(t testing.TB, n *Node, logs []*raft.Log) {
	t.Helper()
	if err := applyLogs(n, logs); err != nil {
		t.Fatal(err)
	}
}

// applyLogs applies logs in batches as raft would, and fails on the
// first entry that did not apply cleanly.
func applyLogs(n *Node, logs []*raft.Log) error {
	f := (*fsmAdapter)(n)
	for len(logs) > 0 {
		b := logs[:min(len(logs), 64)]
		logs = logs[len(b):]
		for i, r := range f.ApplyBatch(b) {
			if res, ok := r.(*fsm.Result); !ok || res.Err != nil || res.Reply.IsError() {
				return fmt.Errorf("entry %d: %#v", b[i].Index, r)
			}
		}
	}
	return nil
}

// encoded returns the table's snapshot encoding, under the node's lock.
func encoded(t testing.TB, n *Node) []byte {
	t.Helper()
	n.mu.RLock()
	defer n.mu.RUnlock()
	var b bytes.Buffer
	if err := n.table.Snapshot(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// memSink is a raft.SnapshotSink in memory. Only Write, as raft's file
// sink (no ReadFrom to bypass it).
type memSink struct {
	buf               bytes.Buffer
	closed, cancelled bool
	failAfter         int    // Write fails once the buffer holds this much (0: never)
	onFirstWrite      func() // called before the first Write goes in
}

func (s *memSink) Write(p []byte) (int, error) {
	if f := s.onFirstWrite; f != nil {
		s.onFirstWrite = nil
		f()
	}
	if s.failAfter > 0 && s.buf.Len()+len(p) > s.failAfter {
		return 0, errors.New("disk full")
	}
	return s.buf.Write(p)
}
func (s *memSink) Bytes() []byte { return s.buf.Bytes() }
func (s *memSink) Len() int      { return s.buf.Len() }
func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Close() error  { s.closed = true; return nil }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }

// Persist runs while later entries are applied (as raft runs it) and
// still writes exactly the state at the Snapshot call; that snapshot
// restores through the adapter to the same table.
func TestSnapshotPersistRacesApplies(t *testing.T) {
	t.Run("mapped", func(t *testing.T) { testSnapshotPersistRacesApplies(t, true) })
	t.Run("ReadAt", func(t *testing.T) { testSnapshotPersistRacesApplies(t, false) })
}

// notMapped is a fileSnapshot.mapFile that fails, as where mapping is
// not possible.
func notMapped(*os.File, int64) ([]byte, func() error, error) {
	return nil, nil, errors.New("no mapping here")
}

func testSnapshotPersistRacesApplies(t *testing.T, mapped bool) {
	n := adapterNode(t)
	f := (*fsmAdapter)(n)
	applyAll(t, n, setNXLogs(t, 1, 0, 3000, 1))
	want := encoded(t, n)

	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	if !mapped {
		snap.(*fileSnapshot).mapFile = notMapped
	}
	// The point-in-time copy never shows in DataDir (unlinked at once).
	if ents, err := os.ReadDir(n.cfg.DataDir); err != nil || len(ents) != 0 {
		t.Fatalf("DataDir after Snapshot: %v %v", ents, err)
	}

	more := setNXLogs(t, 3001, 3000, 2000, 1)
	var wg sync.WaitGroup
	var applyErr error
	wg.Add(1)
	// Ends after applying its entries.
	go func() {
		defer wg.Done()
		applyErr = applyLogs(n, more)
	}()
	// Persist holds no lock: the racing applies get through while it is
	// in the middle of writing.
	sink := memSink{onFirstWrite: func() {
		if err := n.waitApplied(ctxT(t, 10*time.Second), 5000); err != nil {
			t.Errorf("applies blocked while Persist runs: %v", err)
		}
	}}
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if applyErr != nil {
		t.Fatal(applyErr)
	}
	if !sink.closed || sink.cancelled {
		t.Fatalf("sink closed %v cancelled %v", sink.closed, sink.cancelled)
	}
	if !bytes.Equal(sink.Bytes(), want) {
		t.Fatalf("persisted %d bytes differ from the %d encoded at Snapshot", sink.Len(), len(want))
	}
	if got := n.AppliedIndex(); got != 5000 {
		t.Fatalf("applied %d after the racing applies, want 5000", got)
	}

	r := adapterNode(t)
	if err := (*fsmAdapter)(r).Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if got := r.AppliedIndex(); got != 3000 {
		t.Fatalf("restored applied index %d, want 3000", got)
	}
	if st := r.table.Stats(); st.Keys != 3000 {
		t.Fatalf("restored %d keys, want 3000", st.Keys)
	}
	if !bytes.Equal(encoded(t, r), want) {
		t.Fatal("restored table encodes differently")
	}
	// The restored node goes on from the next entry.
	applyAll(t, r, setNXLogs(t, 3001, 3000, 10, 1))
	if st := r.table.Stats(); st.Keys != 3010 {
		t.Fatalf("%d keys after applying on the restored table", st.Keys)
	}
}

func TestSnapshotPersistFailures(t *testing.T) {
	n := adapterNode(t)
	f := (*fsmAdapter)(n)
	applyAll(t, n, setNXLogs(t, 1, 0, 500, 1))
	want := encoded(t, n)

	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// A sink that fails is cancelled and the error returned.
	bad := memSink{failAfter: 100}
	if err := snap.Persist(&bad); err == nil || !bad.cancelled || bad.closed {
		t.Fatalf("failing sink: err %v, cancelled %v, closed %v", err, bad.cancelled, bad.closed)
	}
	// The same snapshot can be persisted again, also the other way.
	var ok memSink
	if err := snap.Persist(&ok); err != nil || !bytes.Equal(ok.Bytes(), want) {
		t.Fatalf("second Persist: %v, %d bytes, want %d", err, ok.Len(), len(want))
	}
	snap.(*fileSnapshot).mapFile = notMapped
	bad = memSink{failAfter: 100}
	if err := snap.Persist(&bad); err == nil || !bad.cancelled || bad.closed {
		t.Fatalf("failing sink, not mapped: err %v, cancelled %v, closed %v", err, bad.cancelled, bad.closed)
	}
	ok = memSink{}
	if err := snap.Persist(&ok); err != nil || !bytes.Equal(ok.Bytes(), want) || !ok.closed {
		t.Fatalf("Persist not mapped: %v, %d bytes, want %d", err, ok.Len(), len(want))
	}
	snap.Release()
	snap.Release() // idempotent
	var late memSink
	if err := snap.Persist(&late); err == nil || !late.cancelled {
		t.Fatalf("Persist after Release: %v, cancelled %v", err, late.cancelled)
	}

	// A DataDir that is gone fails Snapshot cleanly.
	gone := adapterNode(t)
	gone.cfg.DataDir = t.TempDir() + "/missing"
	if _, err := (*fsmAdapter)(gone).Snapshot(); err == nil {
		t.Fatal("Snapshot into a missing DataDir succeeded")
	}
}

// A bad snapshot fails Restore and leaves the table as it was.
func TestRestoreBadSnapshot(t *testing.T) {
	n := adapterNode(t)
	applyAll(t, n, setNXLogs(t, 1, 0, 100, 1))
	good := encoded(t, n)
	for name, data := range map[string][]byte{
		"empty":     nil,
		"truncated": good[:len(good)/2],
		"version":   append([]byte{99}, good[1:]...),
		"trailing":  append(append([]byte(nil), good...), 1, 2, 3),
	} {
		t.Run(name, func(t *testing.T) {
			if err := (*fsmAdapter)(n).Restore(io.NopCloser(bytes.NewReader(data))); err == nil {
				t.Fatal("restored")
			}
			if !bytes.Equal(encoded(t, n), good) || n.AppliedIndex() != 100 {
				t.Fatal("table changed by a failed restore")
			}
		})
	}
}

// TestSnapshotCost measures, for LOCKNODE_SNAPSHOT_COST=<locks> (skipped
// otherwise), the apply stall and transient heap of a snapshot, the old
// way (in a bytes.Buffer) and this way (unlinked file), and a restore
// with the collector and with it switched off (tried, see snapshot.go). Run each variant in its own process
// for clean heap figures:
//
//	LOCKNODE_SNAPSHOT_COST=1000000 go test ./cluster -run TestSnapshotCost -v
//
// LOCKNODE_SNAPSHOT_VARIANT=file LOCKNODE_SNAPSHOT_REPEAT=5 takes five
// snapshots of one table and reports the median pause;
// LOCKNODE_SNAPSHOT_NOMAP=1 persists them without mapping the file.
func TestSnapshotCost(t *testing.T) {
	nLocks, _ := strconv.Atoi(os.Getenv("LOCKNODE_SNAPSHOT_COST"))
	if nLocks <= 0 {
		t.Skip("set LOCKNODE_SNAPSHOT_COST=<locks> to measure")
	}
	variant := os.Getenv("LOCKNODE_SNAPSHOT_VARIANT") // buffer, file, restore-gc, restore-nogc; "" all
	n := adapterNode(t)
	applyAll(t, n, setNXLogs(t, 1, 0, nLocks, 100))
	runtime.GC()
	var ms runtime.MemStats
	mem := func() runtime.MemStats { runtime.ReadMemStats(&ms); return ms }
	live := mem().HeapAlloc
	t.Logf("%d locks, live heap %.0f MB", nLocks, float64(live)/(1<<20))

	var data []byte
	if variant == "" || variant == "buffer" {
		runtime.GC()
		before := mem()
		start := time.Now()
		n.mu.RLock()
		var buf bytes.Buffer
		if err := n.table.Snapshot(&buf); err != nil {
			t.Fatal(err)
		}
		n.mu.RUnlock()
		stall := time.Since(start)
		after := mem()
		t.Logf("buffer: stall %v, allocated %.0f MB, heap sys +%.0f MB, snapshot %.1f MB",
			stall.Round(time.Millisecond), float64(after.TotalAlloc-before.TotalAlloc)/(1<<20),
			float64(after.HeapSys-before.HeapSys)/(1<<20), float64(buf.Len())/(1<<20))
		data = buf.Bytes()
	}
	if variant == "" || variant == "file" {
		// LOCKNODE_SNAPSHOT_REPEAT snapshots of the same table, so one
		// fill (most of the test's time) gives several samples.
		repeat, _ := strconv.Atoi(os.Getenv("LOCKNODE_SNAPSHOT_REPEAT"))
		var stalls []time.Duration
		for i := 0; i < max(repeat, 1); i++ {
			runtime.GC()
			before := mem()
			rss0 := resetPeakRSS()
			stop := samplePeakHeap()
			start := time.Now()
			snap, err := (*fsmAdapter)(n).Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			stall := time.Since(start)
			after := mem()
			if os.Getenv("LOCKNODE_SNAPSHOT_NOMAP") != "" {
				snap.(*fileSnapshot).mapFile = notMapped
			}
			// The sink keeps a checksum, not the bytes, so the process's
			// memory is the snapshot's alone; the checksum compares one
			// build's output with another's.
			sink := &crcSink{}
			start = time.Now()
			if err := snap.Persist(sink); err != nil {
				t.Fatal(err)
			}
			persist := time.Since(start)
			peak := stop()
			afterPersist := mem()
			snap.Release()
			stalls = append(stalls, stall)
			t.Logf("file: stall %v, allocated %.0f MB, heap sys +%.0f MB; persist (no lock) %v, allocated %.0f MB; peak heap +%.0f MB; "+
				"RSS %.0f MB before, peak %.0f MB; snapshot %d bytes crc32 %08x",
				stall.Round(time.Millisecond), float64(after.TotalAlloc-before.TotalAlloc)/(1<<20),
				float64(int64(after.HeapSys)-int64(before.HeapSys))/(1<<20), persist.Round(time.Millisecond),
				float64(afterPersist.TotalAlloc-after.TotalAlloc)/(1<<20), float64(peak-before.HeapAlloc)/(1<<20),
				float64(rss0)/(1<<20), float64(peakRSS())/(1<<20), sink.n, sink.crc)
		}
		slices.Sort(stalls)
		t.Logf("file: applies paused, median of %d: %v (min %v, max %v)", len(stalls),
			stalls[len(stalls)/2].Round(time.Millisecond), stalls[0].Round(time.Millisecond), stalls[len(stalls)-1].Round(time.Millisecond))
	}
	if variant == "" || variant == "restore-gc" || variant == "restore-nogc" {
		if data == nil {
			data = encoded(t, n)
		}
		fn := n.cfg.DataDir + "/snap.bin"
		if err := os.WriteFile(fn, data, 0o644); err != nil {
			t.Fatal(err)
		}
		n = nil
		data = nil
		for _, v := range []string{"restore-gc", "restore-nogc"} {
			if variant != "" && variant != v {
				continue
			}
			r := adapterNode(t)
			fh, err := os.Open(fn)
			if err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			before := mem()
			stop := samplePeakHeap()
			cpu0 := cpuTime()
			start := time.Now()
			if v == "restore-nogc" {
				// The variant tried and dropped (snapshot.go).
				prev := debug.SetGCPercent(-1)
				err = (*fsmAdapter)(r).Restore(fh)
				debug.SetGCPercent(prev)
			} else {
				err = (*fsmAdapter)(r).Restore(fh)
			}
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			cpu := cpuTime() - cpu0
			peak := stop()
			after := mem()
			fh.Close()
			runtime.GC()
			// The collection a restore without GC leaves for later
			// (with GC on, what is left of the current cycle).
			cpu1 := cpuTime()
			runtime.GC()
			gcAfter := cpuTime() - cpu1
			t.Logf("%s: %v (cpu %v, then a full GC %v), allocated %.0f MB, peak heap +%.0f MB, live after +%.0f MB, GCs %d, keys %d", v, took.Round(time.Millisecond),
				cpu.Round(time.Millisecond), gcAfter.Round(time.Millisecond), float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), float64(peak-before.HeapAlloc)/(1<<20),
				float64(mem().HeapAlloc-before.HeapAlloc)/(1<<20), after.NumGC-before.NumGC, r.table.Stats().Keys)
		}
	}
}

// crcSink is a raft.SnapshotSink that keeps only a length and checksum.
type crcSink struct {
	n   int64
	crc uint32
}

func (s *crcSink) Write(p []byte) (int, error) {
	s.crc = crc32.Update(s.crc, crc32.IEEETable, p)
	s.n += int64(len(p))
	return len(p), nil
}
func (s *crcSink) ID() string    { return "crc" }
func (s *crcSink) Close() error  { return nil }
func (s *crcSink) Cancel() error { return nil }

// resetPeakRSS resets the process's peak resident set (Linux) and
// returns the current one; 0 where unknown.
func resetPeakRSS() uint64 {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	return procStatus("VmRSS:")
}

// peakRSS is the peak resident set since resetPeakRSS (Linux; 0 where
// unknown).
func peakRSS() uint64 { return procStatus("VmHWM:") }

func procStatus(field string) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// samplePeakHeap samples the heap's object bytes every millisecond until
// the returned function is called, which returns the largest sample.
func samplePeakHeap() (stop func() uint64) {
	done := make(chan struct{})
	peak := make(chan uint64, 1)
	// Ends when stop closes done.
	go func() {
		s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var p uint64
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			rtmetrics.Read(s)
			p = max(p, s[0].Value.Uint64())
			select {
			case <-done:
				peak <- p
				return
			case <-tk.C:
			}
		}
	}()
	return func() uint64 { close(done); return <-peak }
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// With FreeMemoryAfterSnapshot a persisted snapshot returns free heap to
// the OS: garbage left by the snapshot (here a 64 MiB slice) is not kept
// resident.
func TestSnapshotFreesMemory(t *testing.T) {
	n := adapterNode(t)
	applyAll(t, n, setNXLogs(t, 1, 0, 10, 1))
	for _, free := range []bool{false, true} {
		t.Run(fmt.Sprintf("free=%v", free), func(t *testing.T) {
			snap, err := (*fsmAdapter)(n).Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			s := snap.(*fileSnapshot)
			defer s.Release()
			s.freeMemory = free
			garbage := make([]byte, 64<<20)
			for i := range garbage {
				garbage[i] = 1 // touch: resident, not just reserved
			}
			runtime.KeepAlive(garbage)
			garbage = nil
			runtime.GC() // garbage collected but its pages still held
			var mid runtime.MemStats
			runtime.ReadMemStats(&mid)
			if err := s.Persist(&memSink{}); err != nil {
				t.Fatal(err)
			}
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			released := int64(after.HeapReleased) - int64(mid.HeapReleased)
			t.Logf("heap released by Persist: %d MiB", released>>20)
			if free && released < 32<<20 {
				t.Errorf("Persist released %d MiB, want the 64 MiB of garbage back", released>>20)
			}
		})
	}
}

// A restore tells subscribers (client-side caching) with one EvRestored:
// the replaced table carries no events of what changed. A failed one
// tells nobody.
func TestRestoreTellsSubscribers(t *testing.T) {
	n := adapterNode(t)
	applyAll(t, n, setNXLogs(t, 1, 0, 100, 1))
	good := encoded(t, n)
	var got []fsm.Event
	cancel := n.Subscribe(func(_ uint64, evs []fsm.Event) { got = append(got, evs...) })
	defer cancel()
	if err := (*fsmAdapter)(n).Restore(io.NopCloser(bytes.NewReader(good[:len(good)/2]))); err == nil {
		t.Fatal("a truncated snapshot restored")
	}
	if len(got) != 0 {
		t.Fatalf("a failed restore told subscribers %+v", got)
	}
	if err := (*fsmAdapter)(n).Restore(io.NopCloser(bytes.NewReader(good))); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Kind != fsm.EvRestored {
		t.Fatalf("subscribers got %+v, want one EvRestored", got)
	}
}
