package fsm

import (
	"bytes"
	"runtime"
	"strconv"
	"testing"
)

// Memory and restart cost of many held locks, shaped like the scale
// benchmark (bench/): every lock is an exclusive hold with a lease, taken
// by its own owner token. A native acquire carries a request id as the
// cluster sets one on every acquire (cluster/locker.go: node id, random
// prefix, sequence number), so the exactly-once table is full as well.
//
//	go test ./fsm -run '^$' -bench 'HeldLocks|RestoreHeld' -count 5
//	go test ./fsm -run '^$' -bench HeldLocksNative -benchtime 1x -memprofile heap.out

const heldLocks = 1_000_000

// fillNative applies n native acquires, each with a request id.
func fillNative(tb testing.TB, tab *Table, n int) {
	c := Command{Op: OpAcquire, TTL: 3_600_000, Time: 1_700_000_000_000}
	kb := []byte("bench/held/")
	ob := []byte("owner-")
	rb := []byte("n1-8f3a9c0d1e2b4a5f-")
	for i := 0; i < n; i++ {
		// Fresh strings per command, as DecodeCommand makes them.
		c.Key = string(strconv.AppendInt(kb, int64(i), 10))
		c.Owner = string(strconv.AppendInt(ob, int64(i), 10))
		c.ReqID = string(strconv.AppendInt(rb, int64(i+1), 10))
		if r := tab.Apply(uint64(i+1), &c); !r.Granted {
			tb.Fatalf("acquire %d: %+v", i, r)
		}
	}
}

// fillRedis takes n locks with SET key token NX PX, as the scale
// workload's scripts do (no request ids: RESP clients have none).
func fillRedis(tb testing.TB, tab *Table, n int) {
	for i := 0; i < n; i++ {
		cmd := &Command{Op: OpRedis, Time: 1_700_000_000_000, Args: [][]byte{
			[]byte("SET"), strconv.AppendInt([]byte("bench/held/"), int64(i), 10),
			strconv.AppendInt([]byte("owner-"), int64(i), 10),
			[]byte("NX"), []byte("PX"), []byte("3600000")}}
		if r := tab.Apply(uint64(i+1), cmd); r.Err != nil {
			tb.Fatalf("set %d: %v", i, r.Err)
		}
	}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func benchHeld(b *testing.B, fill func(testing.TB, *Table, int)) {
	var perLock float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		base := liveHeap()
		b.StartTimer()
		tab := New(Config{})
		fill(b, tab, heldLocks)
		b.StopTimer()
		perLock = float64(liveHeap()-base) / heldLocks
		if s := tab.Stats(); s.Holds != heldLocks {
			b.Fatalf("stats: %+v", s)
		}
		runtime.KeepAlive(tab)
		b.StartTimer()
	}
	b.ReportMetric(perLock, "bytes/lock")
}

// BenchmarkHeldLocksNative: live heap per lock after 1M native acquires.
func BenchmarkHeldLocksNative(b *testing.B) { benchHeld(b, fillNative) }

// BenchmarkHeldLocksRedis: live heap per lock after 1M SET NX PX.
func BenchmarkHeldLocksRedis(b *testing.B) { benchHeld(b, fillRedis) }

// BenchmarkRestoreHeld restores a snapshot of 1M native locks (with their
// request ids); it also reports the restored table's live heap per lock.
func BenchmarkRestoreHeld(b *testing.B) {
	tab := New(Config{})
	fillNative(b, tab, heldLocks)
	var buf bytes.Buffer
	if err := tab.Snapshot(&buf); err != nil {
		b.Fatal(err)
	}
	tab = nil
	var perLock float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		base := liveHeap()
		b.StartTimer()
		n := New(Config{})
		if err := n.Restore(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		perLock = float64(liveHeap()-base) / heldLocks
		runtime.KeepAlive(n)
		b.StartTimer()
	}
	b.ReportMetric(perLock, "bytes/lock")
	b.ReportMetric(float64(buf.Len())/heldLocks, "snapB/lock")
}

// BenchmarkSnapshotHeld writes a snapshot of 1M native locks.
func BenchmarkSnapshotHeld(b *testing.B) {
	tab := New(Config{})
	fillNative(b, tab, heldLocks)
	var buf bytes.Buffer
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf.Reset()
		if err := tab.Snapshot(&buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len())/heldLocks, "snapB/lock")
}
