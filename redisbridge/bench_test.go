package redisbridge

import (
	"strings"
	"testing"
)

// benchPipeline sends batches of 100 copies of one command and reads the
// replies; reports allocations per command.
func benchPipeline(b *testing.B, args ...string) {
	s, _ := testServer(b, Config{})
	c := dialRaw(b, s)
	c.do("SET", "k", "v")
	batch := strings.Repeat(cmdBytes(args...), 100)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 100 {
		c.send(batch)
		for j := 0; j < 100; j++ {
			c.read()
		}
	}
}

func BenchmarkPing(b *testing.B)    { benchPipeline(b, "PING") }
func BenchmarkGet(b *testing.B)     { benchPipeline(b, "GET", "k") }
func BenchmarkSetNXPX(b *testing.B) { benchPipeline(b, "SET", "lock", "token", "NX", "PX", "30000") }
