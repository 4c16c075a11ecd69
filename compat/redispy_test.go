package compat

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// python finds an interpreter that can import redis: Debian's
// /usr/bin/python3 with python3-redis first (a pyenv shim earlier in PATH
// usually lacks the module).
func python(t testing.TB) string {
	t.Helper()
	cands := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	for _, p := range cands {
		out, err := exec.Command(p, "-c", "import redis; print(redis.__version__)").Output()
		if err == nil {
			t.Logf("python %s, redis-py %s", p, strings.TrimSpace(string(out)))
			return p
		}
	}
	missing(t, "no python3 that can import redis (Debian package python3-redis)")
	return ""
}

// TestRedisPyLock: redis-py's redis.lock.Lock (RESP2, scripts by EVALSHA
// with SCRIPT LOAD on NOSCRIPT) against the cluster: acquire, extend
// (added and replaced TTL), reacquire, owned(), locked(), release, refusals
// of a stranger and of an expired owner, and a blocking acquire in one
// process handed the lock by another process's release on another node.
func TestRedisPyLock(t *testing.T) {
	py := python(t)
	prog, err := filepath.Abs("testdata/redispy_lock.py")
	if err != nil {
		t.Fatal(err)
	}
	tc := newCluster(t, 3)

	t.Run("suite", func(t *testing.T) {
		c := startChild(t, "redispy suite", "", nil, py, prog, "suite", tc.resp[0], tc.resp[1], uniq("redispy"))
		for _, step := range []string{"acquire", "exclusive", "extend", "extend_replace", "reacquire",
			"not_owner", "release", "reacquire_after_release", "expiry", "context_manager"} {
			c.expect("ok "+step, 30*time.Second)
		}
		c.finish(10 * time.Second)
	})

	t.Run("handoff", func(t *testing.T) {
		key := uniq("redispy-handoff")
		holder := startChild(t, "redispy hold", "", nil, py, prog, "hold", tc.resp[0], key)
		holder.expect("held", 30*time.Second)
		waiter := startChild(t, "redispy wait", "", nil, py, prog, "wait", tc.resp[2], key)
		waiter.expect("contended", 30*time.Second)
		// The waiter polls now; it must not get the lock while the holder
		// (20 s lease) has it. Nothing it prints before the release may be
		// "acquired": read what is there without waiting for more.
		for drained := false; !drained; {
			select {
			case line, ok := <-waiter.lines:
				if !ok {
					t.Fatalf("waiter exited while blocked: %v", waiter.wait())
				}
				if line == "acquired" {
					t.Fatal("waiter acquired while the holder held the lock")
				}
				t.Logf("waiter: %s", line)
			default:
				drained = true
			}
		}
		holder.send("release")
		holder.expect("released", 30*time.Second)
		waiter.expect("acquired", 30*time.Second)
		waiter.expect("done", 30*time.Second)
		holder.finish(10 * time.Second)
		waiter.finish(10 * time.Second)
	})
}

// TestRedisPyKeyspaceLoss: a redis-py worker holding a lock (redis.lock.Lock
// through one node) learns from keyspace notifications on another node
// that its lease expired (not before it ended), and that someone deleted
// the key.
func TestRedisPyKeyspaceLoss(t *testing.T) {
	py := python(t)
	prog, err := filepath.Abs("testdata/redispy_keyspace.py")
	if err != nil {
		t.Fatal(err)
	}
	tc := newCluster(t, 3)
	lead := tc.leader(10 * time.Second)
	c := startChild(t, "redispy keyspace", "", nil, py, prog, tc.resp[lead], tc.resp[(lead+1)%3], uniq("redispy-ks"))
	for _, step := range []string{"expired", "deleted"} {
		c.expect("ok "+step, 30*time.Second)
	}
	c.expect("done", 10*time.Second)
	c.finish(10 * time.Second)
}
