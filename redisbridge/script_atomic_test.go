package redisbridge

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestFailedScriptAtomicCluster: over RESP on a 3-node cluster, a script
// that writes (a lock, strings, a hash, a list, a publish) and then fails
// changes nothing on any node and publishes nothing; a failed EVAL is not
// cached for EVALSHA. The same script without the failure keeps its
// writes.
func TestFailedScriptAtomicCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a raft cluster")
	}
	nodes := startBridgeCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clients := make([]*redis.Client, 3)
	for i, b := range nodes {
		clients[i] = goRedis(t, b.srv, 2+i%2)
	}
	eventually(t, 15*time.Second, "a first write", func() bool {
		err := clients[0].Set(ctx, "str", "before", 0).Err()
		if err != nil && !strings.HasPrefix(err.Error(), "TRYAGAIN") {
			t.Fatal(err)
		}
		return err == nil
	})
	c := clients[leaderOf(nodes)]
	if err := c.SetNX(ctx, "lock", "tok", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.HSet(ctx, "h", "f", "before").Err(); err != nil {
		t.Fatal(err)
	}
	sub := clients[2].Subscribe(ctx, "ch")
	t.Cleanup(func() { sub.Close() })
	if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	msgs := sub.Channel()

	body := `
		redis.call('SET', KEYS[1], 'changed')
		redis.call('HSET', KEYS[2], 'f', 'changed')
		redis.call('RPUSH', KEYS[3], 'x')
		redis.call('DEL', KEYS[4])
		redis.call('SET', KEYS[5], 'tok2', 'NX', 'PX', 60000)
		redis.call('PUBLISH', 'ch', 'from the failed script')
	`
	keys := []string{"str", "h", "list", "lock", "newlock"}
	state := func(c *redis.Client) string {
		t.Helper()
		var b strings.Builder
		for _, cmd := range [][]any{{"GET", "str"}, {"HGET", "h", "f"}, {"LLEN", "list"}, {"GET", "lock"}, {"GET", "newlock"}} {
			var v any
			err := pastElection(func() (err error) { v, err = c.Do(ctx, cmd...).Result(); return err })
			if err == redis.Nil {
				v = "nil"
			} else if err != nil {
				t.Fatalf("%v: %v", cmd, err)
			}
			fmt.Fprintf(&b, "%v|", v)
		}
		return b.String()
	}
	const want = "before|before|0|tok|nil|"

	for _, tc := range []struct {
		name, script, errPrefix string
	}{
		{"runtime error", body + `error('boom')`, "ERR user_script:"},
		{"raised error reply", body + `error(redis.error_reply('MYERR no'))`, "MYERR no"},
		{"failing redis.call", body + `redis.call('HSET', KEYS[1], 'f', 'v')`, "WRONGTYPE"},
		{"step budget", body + `while true do end`, "ERR locknode: script exceeded"},
		{"memory limit", body + `local s = 'x' while true do s = s .. s end`, "ERR locknode: script memory limit exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Through a follower and the leader alike.
			for i, cl := range clients {
				err := pastElection(func() error { return cl.Eval(ctx, tc.script, keys).Err() })
				if err == nil || !strings.HasPrefix(err.Error(), tc.errPrefix) {
					t.Fatalf("node %d: EVAL err = %v, want prefix %q", i, err, tc.errPrefix)
				}
				for j, other := range clients {
					if got := state(other); got != want {
						t.Fatalf("after the failed script on node %d, node %d reads %s, want %s", i, j, got, want)
					}
				}
				sha := sha1hex([]byte(tc.script))
				if err := pastElection(func() error { return cl.EvalSha(ctx, sha, keys).Err() }); err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
					t.Fatalf("node %d: EVALSHA of the failed script: %v, want NOSCRIPT", i, err)
				}
			}
		})
	}

	// Nothing was published by the failed scripts: the first message the
	// subscriber gets is the one sent after them.
	if err := c.Publish(ctx, "ch", "after").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-msgs:
		if m.Payload != "after" {
			t.Fatalf("subscriber got %q first, want \"after\"", m.Payload)
		}
	case <-ctx.Done():
		t.Fatal("no message")
	}

	// The same writes in a script that succeeds stay.
	if err := c.Eval(ctx, body+`return 1`, keys).Err(); err != nil {
		t.Fatal(err)
	}
	for j, other := range clients {
		if got := state(other); got != "changed|changed|1|nil|tok2|" {
			t.Fatalf("node %d after the good script: %s", j, got)
		}
	}
	select {
	case m := <-msgs:
		if m.Payload != "from the failed script" {
			t.Fatalf("subscriber got %q", m.Payload)
		}
	case <-ctx.Done():
		t.Fatal("no message from the good script")
	}
}

// pastElection runs do again while it fails with TRYAGAIN (a loaded
// machine's nodes changing leaders), for up to 30 s: the commands it
// wraps are reads and failing scripts, which change nothing.
func pastElection(do func() error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := do()
		if err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond) // poll interval, not synchronisation
	}
}
