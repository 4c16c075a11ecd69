package compat

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// runNodeLocks starts testdata/nodelocks/locks.cjs with the packages of
// testdata/nodelocks/package-lock.json (redis-semaphore, ioredis,
// simple-redis-mutex, node-redis).
func runNodeLocks(t *testing.T, name string, args ...string) *child {
	t.Helper()
	node := needProgram(t, "node")
	mods := nodeModulesOf(t, "testdata/nodelocks", "redis-semaphore")
	script, err := filepath.Abs("testdata/nodelocks/locks.cjs")
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "NODE_PATH="+mods)
	return startChild(t, name, filepath.Dir(script), env, node, append([]string{script}, args...)...)
}

// TestNodeLockLibraries runs two more npm lock libraries with their
// default options through a follower's bridge (every write forwarded):
//   - redis-semaphore 5 over ioredis 5: Mutex (SET NX PX, refresh and
//     release scripts), Semaphore and MultiSemaphore, whose scripts trim
//     expired holders with ZREMRANGEBYSCORE, count them with ZCARD and add
//     permits with ZADD of unpack(...);
//   - simple-redis-mutex 3 over node-redis 5: SET NX PX, INCR fencing
//     tokens, a release script loaded with SCRIPT LOAD and run by EVALSHA
//     that PUBLISHes the release (string.format of a JSON message), and
//     a waiter woken by that message.
func TestNodeLockLibraries(t *testing.T) {
	tc := newCluster(t, 3)
	follower := (tc.leader(10*time.Second) + 1) % 3
	for _, tcase := range []struct {
		mode  string
		steps []string
	}{
		{"semaphore", []string{"mutex acquire", "mutex release", "mutex refresh", "semaphore limit", "semaphore release", "multisemaphore"}},
		{"mutex", []string{"trylock", "fencing", "wake on release", "release"}},
	} {
		t.Run(tcase.mode, func(t *testing.T) {
			c := runNodeLocks(t, "node "+tcase.mode, tcase.mode, tc.resp[follower], uniq(tcase.mode))
			for _, step := range tcase.steps {
				c.expect("ok "+step, 60*time.Second)
			}
			c.expect("done", 30*time.Second)
			c.finish(10 * time.Second)
		})
	}
}

// TestNodeRedisKeyspaceLoss: a node-redis 5 worker holding a lock (SET NX
// PX through the leader) learns from keyspace notifications on a follower
// that its lease expired (not before it ended), and that someone deleted
// the key (testdata/nodelocks/keyspace.cjs).
func TestNodeRedisKeyspaceLoss(t *testing.T) {
	node := needProgram(t, "node")
	mods := nodeModulesOf(t, "testdata/nodelocks", "redis-semaphore")
	script, err := filepath.Abs("testdata/nodelocks/keyspace.cjs")
	if err != nil {
		t.Fatal(err)
	}
	tc := newCluster(t, 3)
	lead := tc.leader(10 * time.Second)
	env := append(os.Environ(), "NODE_PATH="+mods)
	c := startChild(t, "node-redis keyspace", filepath.Dir(script), env, node, script,
		tc.resp[lead], tc.resp[(lead+1)%3], uniq("noderedis-ks"))
	for _, step := range []string{"expired", "deleted"} {
		c.expect("ok "+step, 30*time.Second)
	}
	c.expect("done", 10*time.Second)
	c.finish(10 * time.Second)
}
