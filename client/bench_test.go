package client_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/httpapi"
)

// instantLocker answers TryAcquire and Release at once, so a benchmark
// through it measures only the HTTP path: client, wire, httpapi.
type instantLocker struct {
	api.Locker // nil: every other method panics, and the benchmark calls none
	fence      atomic.Uint64
}

func (l *instantLocker) TryAcquire(_ context.Context, req api.AcquireRequest) (api.Lease, error) {
	return api.Lease{Key: req.Key, Owner: req.Owner, Fence: l.fence.Add(1), TTLMs: req.TTLMs, Deadline: 1234567}, nil
}

func (l *instantLocker) Release(context.Context, api.ReleaseRequest) (api.ReleaseResult, error) {
	return api.ReleaseResult{Released: true}, nil
}

// BenchmarkHTTPCycle is one TryAcquire + Release through the Go client and
// httpapi over loopback, against a Locker that costs nothing: the per-cycle
// CPU and allocations of the HTTP path itself (client and server both in
// this process).
//
// Parallel: 16 goroutines, CPU-bound; cpu-us/op (user+system CPU of the
// process per cycle) is the figure to compare, as the machine may be
// shared. Serial: one goroutine, so ns/op is the latency of a cycle.
func BenchmarkHTTPCycle(b *testing.B) {
	srv := httptest.NewServer(httpapi.New(&instantLocker{}, httpapi.Config{}))
	defer srv.Close()
	c, err := client.New(client.Config{Endpoints: []string{srv.URL}})
	if err != nil {
		b.Fatal(err)
	}
	cycle := func(ctx context.Context, key string) error {
		lease, err := c.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "owner-token-0123456789", TTLMs: 10000})
		if err != nil {
			return err
		}
		_, err = c.Release(ctx, api.ReleaseRequest{Key: key, Owner: lease.Owner})
		return err
	}
	b.Run("parallel", func(b *testing.B) {
		var worker atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(8)
		cpu0 := cpuTime()
		b.RunParallel(func(pb *testing.PB) {
			key := "bench-" + strconv.FormatInt(worker.Add(1), 10)
			for pb.Next() {
				if err := cycle(context.Background(), key); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
	})
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := cpuTime()
		for b.Loop() {
			if err := cycle(context.Background(), "bench-serial"); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
	})
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
