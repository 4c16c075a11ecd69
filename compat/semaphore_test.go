package compat

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redlock-style semaphores (the npm redis-semaphore RedlockSemaphore
// shape, written here): each endpoint runs one script — drop expired
// members, admit when ZCARD < limit, ZADD the member — and a quorum of
// endpoints must admit. A cluster is one sorted set whichever node a
// client talks to, so such a client must be given one endpoint (docs/redis.md
// "Which client takes what"): given several nodes of one cluster, its own
// first vote counts against it on the next ones. Unlike a repeated SET NX
// by the holder, the key space cannot answer the repeat as the first
// run: the admission is a decision inside the library's script, not a
// command it could recognise the member's repeat of, and running an
// identical script call twice is, in general, meant to act twice.

const luaZSemAcquire = `local key = KEYS[1]
local limit = tonumber(ARGV[1])
local identifier = ARGV[2]
local lockTimeout = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
redis.call('zremrangebyscore', key, '-inf', now - lockTimeout)
if redis.call('zcard', key) < limit then
  redis.call('zadd', key, now, identifier)
  redis.call('pexpire', key, lockTimeout)
  return 1
end
return 0`

const luaZSemRelease = `return redis.call('zrem', KEYS[1], ARGV[1])`

// semAcquire is the quorum client: the script on every endpoint with the
// same arguments; below a majority it releases everywhere.
func semAcquire(ctx context.Context, t *testing.T, eps []*redis.Client, key string, limit int, id string) bool {
	t.Helper()
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	votes := 0
	for _, c := range eps {
		n, err := c.Eval(ctx, luaZSemAcquire, []string{key}, limit, id, 30000, now).Int()
		if err != nil {
			t.Fatalf("acquire script: %v", err)
		}
		votes += n
	}
	if votes >= len(eps)/2+1 {
		return true
	}
	for _, c := range eps {
		if err := c.Eval(ctx, luaZSemRelease, []string{key}, id).Err(); err != nil {
			t.Fatalf("release script: %v", err)
		}
	}
	return false
}

func TestSemaphoreScriptsTakeOneEndpoint(t *testing.T) {
	tc := newCluster(t, 3)
	tc.leader(10 * time.Second)
	ctx := ctxT(t, 60*time.Second)
	var nodes []*redis.Client
	for i := range 3 {
		nodes = append(nodes, goRedis(t, tc.resp[i], 2))
	}
	cases := []struct {
		name  string
		eps   []*redis.Client
		limit int
		want  int // admitted of 5 contenders
	}{
		{"one node, limit 3", nodes[1:2], 3, 3},
		{"one node, limit 1", nodes[2:3], 1, 1},
		// docs/redis.md's rule: a quorum over nodes of one cluster
		// under-admits (never over-admits).
		{"three nodes of one cluster, limit 3", nodes, 3, 2},
		{"three nodes of one cluster, limit 1", nodes, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := uniq("sem")
			admitted := 0
			for i := range 5 {
				if semAcquire(ctx, t, c.eps, key, c.limit, fmt.Sprintf("member-%d", i)) {
					admitted++
				}
			}
			if admitted != c.want {
				t.Fatalf("admitted %d of 5 with limit %d, want %d", admitted, c.limit, c.want)
			}
			if n, err := nodes[0].ZCard(ctx, key).Result(); err != nil || n != int64(c.want) {
				t.Fatalf("ZCARD = %d, %v; want %d holders", n, err, c.want)
			}
		})
	}
}
