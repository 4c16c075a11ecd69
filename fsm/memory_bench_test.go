package fsm

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/locknode/locknode/fsm/reply"
)

// How close the accounted size (MemoryUsed) is to the live heap the
// state really takes: each sub-benchmark fills a fresh table with n
// objects of one kind and reports both per object, and their ratio.
// Figures: bench/results/README.md#key-space-memory.
//
//	go test ./fsm -run '^$' -bench KeyspaceMemory -benchtime 1x

func BenchmarkKeyspaceMemory(b *testing.B) {
	val100 := strings.Repeat("v", 100)
	big := strings.Repeat("b", 1<<20)
	kinds := []struct {
		name string
		n    int
		cmd  func(i int) *Command
	}{
		{"native-lock", 200_000, func(i int) *Command {
			return &Command{Op: OpAcquire, Key: "bench/held/" + strconv.Itoa(i), Owner: "owner-" + strconv.Itoa(i),
				TTL: 3_600_000, ReqID: "n1-8f3a9c0d1e2b4a5f-" + strconv.Itoa(i)}
		}},
		{"native-lock-meta", 200_000, func(i int) *Command {
			// The Go client's default metadata: host and pid.
			return &Command{Op: OpAcquire, Key: "bench/held/" + strconv.Itoa(i), Owner: "owner-" + strconv.Itoa(i),
				TTL: 3_600_000, ReqID: "n1-8f3a9c0d1e2b4a5f-" + strconv.Itoa(i),
				Meta: Meta{{Name: "host", Value: "worker-17.example.com"}, {Name: "pid", Value: strconv.Itoa(100000 + i)}}}
		}},
		{"setnx-lock", 200_000, func(i int) *Command {
			return mcmd("SET", "bench/held/"+strconv.Itoa(i), "owner-"+strconv.Itoa(i), "NX", "PX", "3600000")
		}},
		{"string-100B", 200_000, func(i int) *Command { return mcmd("SET", "k"+strconv.Itoa(i), val100) }},
		{"string-1MiB", 200, func(i int) *Command { return mcmd("SET", "k"+strconv.Itoa(i), big) }},
		{"hash-field", 200_000, func(i int) *Command { return mcmd("HSET", "h", "field"+strconv.Itoa(i), "value") }},
		{"set-member", 200_000, func(i int) *Command { return mcmd("SADD", "s", "member"+strconv.Itoa(i)) }},
		{"zset-member", 200_000, func(i int) *Command { return mcmd("ZADD", "z", strconv.Itoa(i), "member"+strconv.Itoa(i)) }},
		{"list-item", 200_000, func(i int) *Command { return mcmd("RPUSH", "l", "item"+strconv.Itoa(i)) }},
		{"waiter", 100_000, func(i int) *Command {
			if i == 0 {
				return acq("contended", "holder")
			}
			return &Command{Op: OpAcquire, Key: "contended", Owner: "w" + strconv.Itoa(i), TTL: 60_000,
				Wait: 3_600_000, ReqID: "req-" + strconv.Itoa(i)}
		}},
		{"session", 200_000, func(i int) *Command {
			return &Command{Op: OpSessionOpen, Session: "session-" + strconv.Itoa(i), TTL: 3_600_000}
		}},
		{"fence", 200_000, func(i int) *Command { return &Command{Op: OpFenceCheck, Key: "resource/" + strconv.Itoa(i)} }}, // token 0: no grant needed
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			var heap, counted float64
			for range b.N {
				cfg := DefaultConfig()
				cfg.MaxMemory = NoMaxMemory
				cfg.MaxWaitersPerKey = k.n
				base := liveHeap()
				tab := New(cfg)
				for i := range k.n {
					c := k.cmd(i)
					c.Time = 1_700_000_000_000
					if r := tab.Apply(uint64(i+1), c); r.Err != nil || r.Reply.Kind == reply.Error {
						b.Fatalf("%d: %v %v", i, r.Err, r.Reply)
					}
				}
				heap = float64(liveHeap()-base) / float64(k.n)
				counted = float64(tab.MemoryUsed()) / float64(k.n)
				runtime.KeepAlive(tab)
			}
			b.ReportMetric(heap, "heap-B/obj")
			b.ReportMetric(counted, "counted-B/obj")
			b.ReportMetric(counted/heap, "counted/heap")
		})
	}
}
