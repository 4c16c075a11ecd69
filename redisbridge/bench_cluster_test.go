package redisbridge

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"
)

// benchBridgeLeader starts a durable 3-node raft cluster with a bridge on
// every node and returns the leader's bridge, after a first write went
// through (the leader's clock is set up).
func benchBridgeLeader(b *testing.B) *Server {
	b.Helper()
	nodes := startRaftCluster(b, 3)
	srvs := make([]*Server, len(nodes))
	for i, nd := range nodes {
		srvs[i] = testServerOn(b, nd, Config{NodeID: fmt.Sprintf("n%d", i+1), Logger: hclog.NewNullLogger()})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		for i, nd := range nodes {
			if !nd.IsLeader() {
				continue
			}
			c := redis.NewClient(&redis.Options{Addr: srvs[i].Addr(), MaxRetries: -1})
			err := c.Set(ctx, "warm", "x", 0).Err()
			c.Close()
			if err == nil {
				return srvs[i]
			}
		}
		select {
		case <-ctx.Done():
			b.Fatal("no leader")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// BenchmarkClusterLockCycle is lockbench's uncontended RESP workload
// in-process: each worker takes its own lock with SET NX PX and releases
// it with the compare-and-delete EVALSHA, over go-redis TCP connections
// to the leader of a durable 3-node cluster. One op is one cycle.
func BenchmarkClusterLockCycle(b *testing.B) {
	for _, workers := range []int{1, 64} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			s := benchBridgeLeader(b)
			rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), PoolSize: workers + 8, MaxRetries: -1,
				ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second})
			b.Cleanup(func() { rdb.Close() })
			cad := redis.NewScript(casDelete)
			ctx := context.Background()
			if err := cad.Load(ctx, rdb).Err(); err != nil {
				b.Fatal(err)
			}
			var next atomic.Int64
			lat := make([][]time.Duration, workers)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			start := time.Now()
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				// Ends when the shared counter passes b.N or a command fails.
				go func() {
					defer wg.Done()
					key := fmt.Sprintf("bench:%d", w)
					for i := 0; next.Add(1) <= int64(b.N); i++ {
						tok := fmt.Sprintf("t%d-%d", w, i)
						t0 := time.Now()
						ok, err := rdb.SetNX(ctx, key, tok, 10*time.Second).Result()
						if err != nil || !ok {
							b.Errorf("SET NX %s: %v %v", key, ok, err)
							return
						}
						lat[w] = append(lat[w], time.Since(t0))
						if n, err := cad.EvalSha(ctx, rdb, []string{key}, tok).Int(); err != nil || n != 1 {
							b.Errorf("compare-and-delete %s: %d %v", key, n, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			el := time.Since(start)
			cpu := processCPU() - cpu0
			b.StopTimer()
			reportLatency(b, lat, "acq")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
			b.ReportMetric(float64(b.N)/el.Seconds(), "cycles/s")
		})
	}
}

// BenchmarkClusterPipelineSetNX: 8 connections each send 500-deep
// pipelines of SET NX PX on fresh keys to the leader of a durable 3-node
// cluster. One op is one lock taken.
func BenchmarkClusterPipelineSetNX(b *testing.B) {
	const conns, depth = 8, 500
	s := benchBridgeLeader(b)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), PoolSize: conns, MaxRetries: -1,
		ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
	b.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	var next atomic.Int64
	b.ResetTimer()
	cpu0 := processCPU()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range conns {
		wg.Add(1)
		// Ends when the shared counter passes b.N or a pipeline fails.
		go func() {
			defer wg.Done()
			for {
				first := next.Add(depth) - depth
				if first >= int64(b.N) {
					return
				}
				n := min(int64(depth), int64(b.N)-first)
				p := rdb.Pipeline()
				cmds := make([]*redis.BoolCmd, n)
				for i := range n {
					cmds[i] = p.SetNX(ctx, fmt.Sprintf("fill:%d:%d", w, first+i), "tok", time.Hour)
				}
				if _, err := p.Exec(ctx); err != nil {
					b.Errorf("pipeline: %v", err)
					return
				}
				for _, c := range cmds {
					if !c.Val() {
						b.Errorf("SET NX %v refused", c.Args())
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	cpu := processCPU() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), "locks/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
}

func reportLatency(b *testing.B, lat [][]time.Duration, name string) {
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	if len(all) == 0 {
		return
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, name+"-p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, name+"-p99-ms")
}

// processCPU is the CPU time (user + system) this process used so far:
// CPU per operation is steadier than throughput on a shared machine.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
