package mirror

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm"
)

// BenchmarkMirrorLag measures how long a lock change takes to reach Redis
// (apply to write) with 64 goroutines acquiring and releasing locks on an
// in-process table. b.N is the number of acquire/release cycles; it
// reports the p50 and p99 lag in ms and the keys per batch.
func BenchmarkMirrorLag(b *testing.B) {
	r := startMirrorRedis(b)
	c := r.client(b)
	log := newMirrorLog()
	n := log.node()
	n.leader.Store(true)

	var mu sync.Mutex
	var lags []time.Duration
	m := newTestMirror(b, n, r.addr(), func(c *Config) { c.VerifyInterval = -1 })
	m.lagHook = func(d time.Duration) {
		mu.Lock()
		lags = append(lags, d)
		mu.Unlock()
	}
	startMirror(b, m)
	waitMirrored(b, c, m, n, "", "")

	const workers = 64
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		// Ends after its share of b.N cycles.
		go func() {
			defer wg.Done()
			for i := w; i < b.N; i += workers {
				key := fmt.Sprintf("bench:%d", i%1024)
				owner := fmt.Sprintf("w%d-%d", w, i)
				if res := log.apply(&fsm.Command{Op: fsm.OpAcquire, Key: key, Owner: owner, TTL: 30_000}); res.Granted {
					log.apply(&fsm.Command{Op: fsm.OpRelease, Key: key, Owner: owner})
				}
			}
		}()
	}
	wg.Wait()
	mirrorWait(b, 60*time.Second, "the mirror to catch up", func() (bool, string) {
		st := m.Status()
		return st.LagEntries == 0 && st.QueuedKeys == 0, fmt.Sprintf("%+v", st)
	})
	b.StopTimer()

	mu.Lock()
	defer mu.Unlock()
	if len(lags) == 0 {
		b.Fatal("no lag samples")
	}
	slices.Sort(lags)
	pct := func(p float64) float64 {
		return float64(lags[int(p*float64(len(lags)-1))].Microseconds()) / 1000
	}
	st := m.Status()
	b.ReportMetric(pct(0.50), "p50-lag-ms")
	b.ReportMetric(pct(0.99), "p99-lag-ms")
	if st.Batches > 0 {
		b.ReportMetric(float64(st.KeysWritten)/float64(st.Batches), "keys/batch")
	}
}
