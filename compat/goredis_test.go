package compat

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// compareAndDelete is the F2 script as go-redis users write it.
const compareAndDelete = `if redis.call("get", KEYS[1]) == ARGV[1] then
	return redis.call("del", KEYS[1])
else
	return 0
end`

// TestGoRedisLock: the plain go-redis lock recipe (SET NX PX, then a
// compare-and-delete script run by Script.Run, which sends EVALSHA and
// falls back to EVAL on NOSCRIPT) on a 3-node cluster, with a client per
// node, in RESP3 (go-redis' default) and RESP2.
func TestGoRedisLock(t *testing.T) {
	tc := newCluster(t, 3)
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ctx := ctxT(t, 30*time.Second)
			cs := []*redis.Client{goRedis(t, tc.resp[0], proto), goRedis(t, tc.resp[1], proto), goRedis(t, tc.resp[2], proto)}

			// The handshake go-redis did is the one asked for.
			hello, err := cs[0].Do(ctx, "HELLO", proto).Result()
			if err != nil {
				t.Fatalf("HELLO %d: %v", proto, err)
			}
			if got := helloProto(hello); got != int64(proto) {
				t.Fatalf("HELLO %d: proto = %d (reply %#v)", proto, got, hello)
			}

			key, tok, other := uniq("goredis"), uniq("tok"), uniq("other")
			// A script text no node has seen: the first Run must take the
			// NOSCRIPT -> EVAL path on every node.
			cad := redis.NewScript(compareAndDelete + "\n-- " + key)
			for i, c := range cs {
				ex, err := c.ScriptExists(ctx, cad.Hash()).Result()
				if err != nil || len(ex) != 1 || ex[0] {
					t.Fatalf("node %d: SCRIPT EXISTS before first use = %v, %v; want [false]", i, ex, err)
				}
			}

			ok, err := cs[0].SetNX(ctx, key, tok, 10*time.Second).Result()
			if err != nil || !ok {
				t.Fatalf("SET NX PX via node 0 = %v, %v", ok, err)
			}
			// Every node sees the same holder and lease, and refuses others.
			for i, c := range cs {
				if v, err := c.Get(ctx, key).Result(); err != nil || v != tok {
					t.Fatalf("node %d: GET = %q, %v; want %q", i, v, err, tok)
				}
				if d, err := c.PTTL(ctx, key).Result(); err != nil || d <= 0 || d > 10*time.Second {
					t.Fatalf("node %d: PTTL = %v, %v; want in (0, 10s]", i, d, err)
				}
				if ok, err := c.SetNX(ctx, key, other, 10*time.Second).Result(); err != nil || ok {
					t.Fatalf("node %d: SET NX by another token = %v, %v; want false", i, ok, err)
				}
				// SET NX PX is an empty (nil) reply when refused, in both protocols.
				if _, err := c.Do(ctx, "SET", key, other, "NX", "PX", 10000).Result(); !errors.Is(err, redis.Nil) {
					t.Fatalf("node %d: raw SET NX PX refused: err = %v; want redis.Nil", i, err)
				}
			}
			// The wrong token deletes nothing (through node 1).
			if n, err := cad.Run(ctx, cs[1], []string{key}, other).Int(); err != nil || n != 0 {
				t.Fatalf("compare-and-delete, wrong token = %d, %v; want 0", n, err)
			}
			if ex, err := cs[1].ScriptExists(ctx, cad.Hash()).Result(); err != nil || !ex[0] {
				t.Fatalf("after EVAL fallback, SCRIPT EXISTS on node 1 = %v, %v; want [true]", ex, err)
			}
			if v, err := cs[2].Get(ctx, key).Result(); err != nil || v != tok {
				t.Fatalf("after wrong-token delete GET = %q, %v; want %q", v, err, tok)
			}
			// The right token deletes (through node 2).
			if n, err := cad.Run(ctx, cs[2], []string{key}, tok).Int(); err != nil || n != 1 {
				t.Fatalf("compare-and-delete, owner = %d, %v; want 1", n, err)
			}
			for i, c := range cs {
				if _, err := c.Get(ctx, key).Result(); !errors.Is(err, redis.Nil) {
					t.Fatalf("node %d: GET after release: err = %v; want redis.Nil", i, err)
				}
			}
			// Free again: another token takes it.
			if ok, err := cs[1].SetNX(ctx, key, other, 10*time.Second).Result(); err != nil || !ok {
				t.Fatalf("SET NX after release = %v, %v", ok, err)
			}
			if n, err := cad.Run(ctx, cs[0], []string{key}, other).Int(); err != nil || n != 1 {
				t.Fatalf("compare-and-delete of the second holder = %d, %v; want 1", n, err)
			}

			// Unknown SHA: the exact NOSCRIPT text clients match on.
			_, err = cs[0].EvalSha(ctx, "0123456789012345678901234567890123456789", []string{key}).Result()
			if err == nil || err.Error() != "NOSCRIPT No matching script. Please use EVAL." {
				t.Fatalf("EVALSHA unknown sha: %v", err)
			}
			// Lua false is a nil reply in both protocols.
			if _, err := cs[0].Eval(ctx, "return false", nil).Result(); !errors.Is(err, redis.Nil) {
				t.Fatalf("EVAL return false: err = %v; want redis.Nil", err)
			}
		})
	}
}

// helloProto reads "proto" from a HELLO reply (RESP3 map or RESP2 pairs).
func helloProto(v any) int64 {
	switch m := v.(type) {
	case map[any]any:
		n, _ := m["proto"].(int64)
		return n
	case map[string]any:
		n, _ := m["proto"].(int64)
		return n
	case []any:
		for i := 0; i+1 < len(m); i += 2 {
			if m[i] == "proto" {
				n, _ := m[i+1].(int64)
				return n
			}
		}
	}
	return -1
}
