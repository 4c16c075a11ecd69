package cluster

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/transport"
)

// benchCluster starts n durable nodes (fsync on, real bolt stores) on
// loopback and returns the leader.
func benchCluster(b *testing.B, n int) *Node {
	b.Helper()
	var trs []*transport.Transport
	var peers []Peer
	for i := 0; i < n; i++ {
		tr, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
		if err != nil {
			b.Fatal(err)
		}
		trs = append(trs, tr)
		peers = append(peers, Peer{ID: fmt.Sprintf("b%d", i), Addr: tr.Addr().String()})
	}
	nodes := make([]*Node, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range nodes {
		cfg := DefaultConfig()
		cfg.ID, cfg.DataDir, cfg.Transport = peers[i].ID, b.TempDir(), trs[i]
		cfg.Bootstrap, cfg.Peers = true, peers
		wg.Add(1)
		// Ends when Start returns.
		go func(i int) {
			defer wg.Done()
			nodes[i], errs[i] = Start(context.Background(), cfg)
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() {
		for _, nd := range nodes {
			nd.Close()
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, nd := range nodes {
			if nd.IsLeader() {
				// The first grant waits for the leader's clock.
				if _, err := nd.Acquire(context.Background(), api.AcquireRequest{Key: "warm", Owner: "w", TTLMs: 1000}); err == nil {
					return nd
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatal("no leader")
	return nil
}

// BenchmarkAcquireRelease measures acquire→release cycles on a 3-node
// durable cluster through the leader's embedded API, each worker on its
// own lock; it reports cycles/s and the acquire latency p50/p99.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, workers := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			leader := benchCluster(b, 3)
			var next atomic.Int64
			lat := make([][]time.Duration, workers)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				// Ends when the shared counter passes b.N.
				go func(w int) {
					defer wg.Done()
					ctx := context.Background()
					key, owner := fmt.Sprintf("k%d", w), fmt.Sprintf("o%d", w)
					for next.Add(1) <= int64(b.N) {
						t0 := time.Now()
						if _, err := leader.Acquire(ctx, api.AcquireRequest{Key: key, Owner: owner, TTLMs: 10000}); err != nil {
							b.Error(err)
							return
						}
						lat[w] = append(lat[w], time.Since(t0))
						if _, err := leader.Release(ctx, api.ReleaseRequest{Key: key, Owner: owner}); err != nil {
							b.Error(err)
							return
						}
					}
				}(w)
			}
			wg.Wait()
			el := time.Since(start)
			b.StopTimer()
			var all []time.Duration
			for _, l := range lat {
				all = append(all, l...)
			}
			sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
			if len(all) > 0 {
				b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "acq-p50-ms")
				b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "acq-p99-ms")
			}
			b.ReportMetric(float64(b.N)/el.Seconds(), "cycles/s")
		})
	}
}
