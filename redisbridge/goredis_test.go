package redisbridge

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const casDelete = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

// TestGoRedisLockFlow: the plain Redis lock recipe over both protocols:
// SET NX PX, GET, a compare-and-delete script sent as EVALSHA (NOSCRIPT,
// then EVAL fallback), then EVALSHA from the cache.
func TestGoRedisLockFlow(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run("RESP"+itoa(proto), func(t *testing.T) {
			s, _ := testServer(t, Config{})
			ctx := context.Background()
			c := goRedis(t, s, proto)
			if err := c.Ping(ctx).Err(); err != nil {
				t.Fatalf("ping: %v", err)
			}
			ok, err := c.SetNX(ctx, "lock", "tok1", 10*time.Second).Result()
			if err != nil || !ok {
				t.Fatalf("SET NX: %v %v", ok, err)
			}
			if ok, _ := c.SetNX(ctx, "lock", "tok2", 10*time.Second).Result(); ok {
				t.Fatal("second SET NX by another token succeeded")
			}
			if v, err := c.Get(ctx, "lock").Result(); err != nil || v != "tok1" {
				t.Fatalf("GET = %q, %v", v, err)
			}
			if ttl, err := c.PTTL(ctx, "lock").Result(); err != nil || ttl <= 0 || ttl > 10*time.Second {
				t.Fatalf("PTTL = %v, %v", ttl, err)
			}
			script := redis.NewScript(casDelete)
			if n, err := script.Run(ctx, c, []string{"lock"}, "tok2").Int(); err != nil || n != 0 {
				t.Fatalf("stranger's delete = %d, %v", n, err)
			}
			if n, err := script.Run(ctx, c, []string{"lock"}, "tok1").Int(); err != nil || n != 1 {
				t.Fatalf("owner's delete = %d, %v", n, err)
			}
			if err := c.Get(ctx, "lock").Err(); err != redis.Nil {
				t.Fatalf("GET after delete: %v", err)
			}
			// EVALSHA now hits the cache.
			if n, err := c.EvalSha(ctx, script.Hash(), []string{"lock"}, "x").Int(); err != nil || n != 0 {
				t.Fatalf("EVALSHA = %d, %v", n, err)
			}
			if err := c.EvalSha(ctx, "0000000000000000000000000000000000000000", nil).Err(); err == nil ||
				err.Error() != "NOSCRIPT No matching script. Please use EVAL." {
				t.Fatalf("unknown sha: %v", err)
			}
			hello, err := c.Do(ctx, "HELLO", proto).Result()
			if err != nil {
				t.Fatalf("HELLO: %v", err)
			}
			t.Logf("HELLO %d = %v", proto, hello)
		})
	}
}

// TestVariadicCommands: commands with more arguments than their minimum
// reach the FSM (the bridge's arity check is "at least").
func TestVariadicCommands(t *testing.T) {
	s, _ := testServer(t, Config{})
	ctx := context.Background()
	c := goRedis(t, s, 3)
	if n, err := c.HSet(ctx, "h", "a", "1", "b", "2", "c", "3").Result(); err != nil || n != 3 {
		t.Fatalf("HSET 3 pairs = %d %v", n, err)
	}
	for _, proto := range []int{2, 3} { // a RESP3 map, a RESP2 flat array
		m, err := goRedis(t, s, proto).HGetAll(ctx, "h").Result()
		if err != nil || len(m) != 3 || m["b"] != "2" {
			t.Fatalf("RESP%d HGETALL = %v %v", proto, m, err)
		}
	}
	if err := c.HSet(ctx, "h", "a", "1", "b").Err(); err == nil {
		t.Fatal("HSET with an odd field list succeeded")
	}
	if n, err := c.Del(ctx, "h", "x", "y", "z", "w", "v", "u", "q", "r", "s", "t", "o").Result(); err != nil || n != 1 {
		t.Fatalf("DEL of 11 keys = %d %v", n, err)
	}
}
