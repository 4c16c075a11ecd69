package redisbridge

import (
	"strings"
	"testing"

	"github.com/locknode/locknode/auth"
)

// benchPipeline sends batches of 100 copies of one command and reads the
// replies; reports allocations per command.
func benchPipeline(b *testing.B, args ...string) { benchPipelineAs(b, Config{}, "", args...) }

// benchPipelineAs is benchPipeline as user (cfg.Users set), so the
// permission check and the FSM's NoForce/KeysOnly checks are in the path.
func benchPipelineAs(b *testing.B, cfg Config, user string, args ...string) {
	s, _ := testServer(b, cfg)
	c := dialRaw(b, s)
	if user != "" {
		c.do("AUTH", user, "p")
	}
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

// The same with a user limited to key patterns and without admin.
func benchUsers(b *testing.B) Config {
	us, err := auth.Parse(strings.NewReader("user app on >p ~k ~lock +@read +@write\n"))
	if err != nil {
		b.Fatal(err)
	}
	return Config{Users: auth.NewStoreFrom(us, nil)}
}

func BenchmarkGetUsers(b *testing.B) { benchPipelineAs(b, benchUsers(b), "app", "GET", "k") }
func BenchmarkSetNXPXUsers(b *testing.B) {
	benchPipelineAs(b, benchUsers(b), "app", "SET", "lock", "token", "NX", "PX", "30000")
}

// BenchmarkPermission: the per-command check alone (user lookup, category,
// one key pattern).
func BenchmarkPermission(b *testing.B) {
	s, _ := testServer(b, benchUsers(b))
	c := &conn{s: s}
	c.acl = connACL{c: c, user: "app", authed: true}
	args := [][]byte{[]byte("GET"), []byte("k")}
	b.ReportAllocs()
	for b.Loop() {
		if msg := c.acl.permission(s.commands["get"], "get", args); msg != "" {
			b.Fatal(msg)
		}
	}
}
