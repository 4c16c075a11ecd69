package fsm

import (
	"bytes"
	"strconv"
	"testing"
)

// BenchmarkAcquireRelease applies acquire+release pairs on a rotating set
// of keys; one op is one Apply.
func BenchmarkAcquireRelease(b *testing.B) {
	tab := New(Config{})
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "lock/" + strconv.Itoa(i)
	}
	acq := Command{Op: OpAcquire, Owner: "owner-1", TTL: 30_000}
	rel := Command{Op: OpRelease, Owner: "owner-1"}
	var idx uint64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 2 {
		k := keys[(i/2)%len(keys)]
		idx++
		acq.Key, acq.Time = k, int64(idx)
		if r := tab.Apply(idx, &acq); !r.Granted {
			b.Fatalf("acquire: %+v", r)
		}
		idx++
		rel.Key, rel.Time = k, int64(idx)
		if r := tab.Apply(idx, &rel); !r.Released {
			b.Fatalf("release: %+v", r)
		}
	}
}

// heldTable builds a table holding n locks.
func heldTable(tb testing.TB, n int) *Table {
	tab := New(Config{})
	c := Command{Op: OpAcquire, TTL: 3_600_000, Time: 1}
	for i := 0; i < n; i++ {
		c.Key = "lock/" + strconv.Itoa(i)
		c.Owner = "owner-" + strconv.Itoa(i%1000)
		if r := tab.Apply(uint64(i+1), &c); !r.Granted {
			tb.Fatalf("acquire: %+v", r)
		}
	}
	return tab
}

const benchLocks = 1_000_000

func BenchmarkSnapshot(b *testing.B) {
	tab := heldTable(b, benchLocks)
	var buf bytes.Buffer
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf.Reset()
		if err := tab.Snapshot(&buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len())/benchLocks, "B/lock")
}

func BenchmarkRestore(b *testing.B) {
	tab := heldTable(b, benchLocks)
	var buf bytes.Buffer
	if err := tab.Snapshot(&buf); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := New(Config{})
		if err := n.Restore(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len())/benchLocks, "B/lock")
}
