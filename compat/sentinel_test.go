package compat

import (
	"context"
	"fmt"
	"net"
	"sync"
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
			var mu sync.Mutex
			var dialed []string
			c := redis.NewFailoverClient(&redis.FailoverOptions{
				MasterName:    "any-name",
				SentinelAddrs: tc.resp,
				Protocol:      proto,
				MaxRetries:    -1, // this test retries itself, to see each failure
				DialTimeout:   time.Second,
				ReadTimeout:   5 * time.Second,
				WriteTimeout:  5 * time.Second,
				// Only connections made count: go-redis keeps retrying the
				// killed node's address as a Sentinel in the background.
				Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
					var d net.Dialer
					conn, err := d.DialContext(ctx, network, addr)
					if err == nil {
						mu.Lock()
						dialed = append(dialed, addr)
						mu.Unlock()
					}
					return conn, err
				},
			})
			t.Cleanup(func() { c.Close() })
			ctx := ctxT(t, 60*time.Second)
			key := uniq("sentinel")
			if err := c.Set(ctx, key, "v1", 30*time.Second).Err(); err != nil {
				t.Fatalf("SET through the failover client: %v", err)
			}
			mu.Lock()
			first := dialed[len(dialed)-1]
			mu.Unlock()
			victim := -1
			for i, a := range tc.resp {
				if a == first {
					victim = i
				}
			}
			if victim < 0 {
				t.Fatalf("the failover client dialed %q, not a node (%v)", first, tc.resp)
			}
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
			mu.Lock()
			last := dialed[len(dialed)-1]
			mu.Unlock()
			if last == first {
				t.Fatalf("still dialing the killed node %s", first)
			}
		})
	}
}
