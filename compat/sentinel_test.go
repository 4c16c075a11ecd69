package compat

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestGoRedisSentinelFailover: go-redis' FailoverClient given the three
// nodes as Sentinels (any master name) reaches a node, and keeps working
// after the node it was using is killed: every node answers SENTINEL
// GET-MASTER-ADDR-BY-NAME with a live node (itself).
func TestGoRedisSentinelFailover(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			tc := newCluster(t, 3) // a fresh one: each run kills a node
			c := redis.NewFailoverClient(&redis.FailoverOptions{
				MasterName:    "any-name",
				SentinelAddrs: tc.resp,
				Protocol:      proto,
				MaxRetries:    -1, // this test retries itself, to see each failure
				DialTimeout:   time.Second,
				ReadTimeout:   5 * time.Second,
				WriteTimeout:  5 * time.Second,
			})
			t.Cleanup(func() { c.Close() })
			ctx := ctxT(t, 60*time.Second)
			key := uniq("sentinel")
			if err := c.Set(ctx, key, "v1", 30*time.Second).Err(); err != nil {
				t.Fatalf("SET through the failover client: %v", err)
			}
			// The node the client's commands reach, asked over its own
			// connection (its Sentinel connections may go elsewhere).
			victim := servingNode(ctx, t, tc, c)
			first := tc.resp[victim]
			t.Logf("using node %d (%s); killing it", victim, first)
			tc.kill(victim)

			var got string
			eventually(t, 30*time.Second, "the failover client to work through another node", func() bool {
				v, err := c.Get(ctx, key).Result()
				got = v
				return err == nil
			})
			if got != "v1" {
				t.Fatalf("GET after fail-over = %q, want v1 (an acknowledged write was lost)", got)
			}
			if ok, err := c.SetNX(ctx, key+"-nx", "tok", 10*time.Second).Result(); err != nil || !ok {
				t.Fatalf("SET NX after fail-over = %v, %v", ok, err)
			}
			if now := servingNode(ctx, t, tc, c); now == victim {
				t.Fatalf("still served by the killed node %s", first)
			}
		})
	}
}

// servingNode returns the index of the node that answers c's commands,
// by the tcp_port of INFO server.
func servingNode(ctx context.Context, t *testing.T, tc *testCluster, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		t.Fatalf("INFO server: %v", err)
	}
	for _, line := range strings.Split(info, "\n") {
		port, ok := strings.CutPrefix(strings.TrimSpace(line), "tcp_port:")
		if !ok {
			continue
		}
		for i, a := range tc.resp {
			if strings.HasSuffix(a, ":"+port) {
				return i
			}
		}
		t.Fatalf("INFO tcp_port %s is no node's (%v)", port, tc.resp)
	}
	t.Fatalf("INFO server has no tcp_port:\n%s", info)
	return -1
}
