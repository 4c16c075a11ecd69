package redisbridge

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestScriptCacheCluster is issue 13 on a 3-node cluster: 10,005 distinct
// EVALs no longer fill the replicated script cache, so SCRIPT LOAD and
// EVALSHA keep working on every node (and redis-py's Lock with them);
// SCRIPT FLUSH through one node empties every node's cache.
func TestScriptCacheCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a raft cluster")
	}
	nodes := startBridgeCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clients := make([]*redis.Client, 3)
	for i, b := range nodes {
		// A pipeline of 500 EVALs, each its own entry and compile on
		// three nodes, can take longer than goRedis' 5 s under -race on
		// a busy machine.
		clients[i] = redis.NewClient(&redis.Options{Addr: b.srv.Addr(), Protocol: 2 + i%2, MaxRetries: -1,
			ReadTimeout: time.Minute, WriteTimeout: time.Minute})
		t.Cleanup(func() { clients[i].Close() })
	}
	eventually(t, 15*time.Second, "a first write", func() bool {
		err := clients[0].Set(ctx, "ready", "1", 0).Err()
		if err != nil && !strings.HasPrefix(err.Error(), "TRYAGAIN") {
			t.Fatal(err)
		}
		return err == nil
	})

	const churn = 10_005
	// Through the leader, where pipelined writes share commits (a
	// follower forwards them one by one); a batch cut by a leader change
	// is sent again (each EVAL returns its number, whatever it ran after).
	began := time.Now()
	for start := 0; start < churn; start += 500 {
		eventually(t, time.Minute, fmt.Sprintf("EVALs from %d", start), func() bool {
			pipe := clients[leaderOf(nodes)].Pipeline()
			var cmds []*redis.Cmd
			for i := start; i < min(start+500, churn); i++ {
				cmds = append(cmds, pipe.Eval(ctx, "return "+strconv.Itoa(i), nil))
			}
			if _, err := pipe.Exec(ctx); err != nil && !strings.HasPrefix(err.Error(), "TRYAGAIN") {
				t.Fatalf("EVALs from %d: %v", start, err)
			} else if err != nil {
				return false
			}
			for j, c := range cmds {
				if n, err := c.Int(); err != nil || n != start+j {
					t.Fatalf("EVAL return %d = %v %v", start+j, n, err)
				}
			}
			return true
		})
	}
	t.Logf("%d distinct EVALs in %v", churn, time.Since(began))

	var loaded []string
	for i, c := range clients {
		sha, err := c.ScriptLoad(ctx, fmt.Sprintf("return 'loaded on %d'", i)).Result()
		if err != nil {
			t.Fatalf("SCRIPT LOAD on node %d after %d EVALs: %v", i, churn, err)
		}
		loaded = append(loaded, sha)
	}
	newest, oldest := sha1hex([]byte("return "+strconv.Itoa(churn-1))), sha1hex([]byte("return 0"))
	for i, c := range clients {
		for j, sha := range loaded {
			if got, err := c.EvalSha(ctx, sha, nil).Text(); err != nil || got != fmt.Sprintf("loaded on %d", j) {
				t.Fatalf("node %d: EVALSHA of the script loaded on %d = %q %v", i, j, got, err)
			}
		}
		if n, err := c.EvalSha(ctx, newest, nil).Int(); err != nil || n != churn-1 {
			t.Fatalf("node %d: EVALSHA of the newest EVAL = %d %v", i, n, err)
		}
		if err := c.EvalSha(ctx, oldest, nil).Err(); err == nil || err.Error() != msgNoScript {
			t.Fatalf("node %d: EVALSHA of an evicted EVAL = %v, want %s", i, err, msgNoScript)
		}
		if got, err := c.ScriptExists(ctx, loaded[0], newest, oldest).Result(); err != nil || fmt.Sprint(got) != "[true true false]" {
			t.Fatalf("node %d: SCRIPT EXISTS = %v %v", i, got, err)
		}
	}

	t.Run("redis-py Lock after the churn", func(t *testing.T) {
		py := pythonWithRedis(t)
		// The leader: its 1,200 pipelined EVALs share commits.
		host, port, _ := net.SplitHostPort(nodes[leaderOf(nodes)].srv.Addr())
		out, err := exec.CommandContext(ctx, py, "testdata/redispy_churn.py", host, port).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "ok" {
			t.Fatalf("redis-py: %v\n%s", err, out)
		}
	})

	t.Run("SCRIPT FLUSH through one node empties all", func(t *testing.T) {
		sha, err := clients[1].ScriptLoad(ctx, "return 'before flush'").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"ASYNC", "sync"} {
			if err := clients[0].Do(ctx, "SCRIPT", "FLUSH", mode).Err(); err != nil {
				t.Fatalf("SCRIPT FLUSH %s: %v", mode, err)
			}
		}
		if err := clients[0].Do(ctx, "SCRIPT", "FLUSH", "LATER").Err(); err == nil || err.Error() != msgFlushMode {
			t.Fatalf("SCRIPT FLUSH LATER = %v", err)
		}
		for i, c := range clients {
			if err := c.EvalSha(ctx, sha, nil).Err(); err == nil || err.Error() != msgNoScript {
				t.Fatalf("node %d: EVALSHA after the flush = %v", i, err)
			}
			if got, err := c.ScriptExists(ctx, sha, loaded[2], newest).Result(); err != nil || fmt.Sprint(got) != "[false false false]" {
				t.Fatalf("node %d: SCRIPT EXISTS after the flush = %v %v", i, got, err)
			}
		}
		// Clients recover as from any NOSCRIPT: go-redis' Script.Run
		// falls back to EVAL.
		s := redis.NewScript("return 'again'")
		for i, c := range clients {
			if got, err := s.Run(ctx, c, nil).Text(); err != nil || got != "again" {
				t.Fatalf("node %d: Script.Run = %q %v", i, got, err)
			}
		}
	})
}

// leaderOf is the index of a node that believes it leads (0 if none).
func leaderOf(nodes []*bridgeNode) int {
	for i, b := range nodes {
		if b.node.IsLeader() {
			return i
		}
	}
	return 0
}

// leaderAndFollower returns the node that believes it leads and one that
// does not; it fails the test when none leads.
func leaderAndFollower(t *testing.T, nodes []*bridgeNode) (leader, follower *bridgeNode) {
	t.Helper()
	for _, b := range nodes {
		if b.node.IsLeader() {
			leader = b
		} else {
			follower = b
		}
	}
	if leader == nil {
		t.Fatal("no leader")
	}
	return leader, follower
}

// TestEvalReadOnlyBridge: EVAL_RO and EVALSHA_RO refuse a write with
// Redis 7's text and change nothing; reads run; a pipelined EVAL_RO is
// read-only too.
func TestEvalReadOnlyBridge(t *testing.T) {
	s, _ := testServer(t, Config{})
	c := dialRaw(t, s)
	set := "return redis.call('set', KEYS[1], 'new')"
	wantErr := "ERR Write commands are not allowed from read-only scripts. script: " + sha1hex([]byte(set)) + ", on @user_script:1."
	if v := c.do("SET", "k", "old"); v.Str != "OK" {
		t.Fatalf("SET = %+v", v)
	}
	sha := c.do("SCRIPT", "LOAD", set).Str
	for _, args := range [][]string{
		{"EVAL_RO", set, "1", "k"},
		{"eval_ro", set, "1", "k"},
		{"EVALSHA_RO", sha, "1", "k"},
		{"evalsha_ro", strings.ToUpper(sha), "1", "k"},
	} {
		if v := c.do(args...); v.Str != wantErr {
			t.Fatalf("%s = %+v, want %s", args[0], v, wantErr)
		}
	}
	// Pipelined: the bridge proposes these without waiting.
	c.send(cmdBytes("EVAL_RO", set, "1", "k") + cmdBytes("EVALSHA_RO", sha, "1", "k") + cmdBytes("EVALSHA_RO", "nosha", "0") +
		cmdBytes("EVAL_RO", "return redis.call('get', KEYS[1])", "1", "k"))
	for i, want := range []string{wantErr, wantErr, msgNoScript, "old"} {
		if v := c.read(); v.Str != want {
			t.Fatalf("pipelined %d = %+v, want %s", i, v, want)
		}
	}
	if v := c.do("GET", "k"); v.Str != "old" {
		t.Fatalf("k = %+v after read-only scripts", v)
	}
}
