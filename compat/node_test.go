package compat

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nodeModules returns a node_modules directory holding the packages of
// testdata/node/package-lock.json: testdata/node/node_modules when a
// developer installed it there, else a cache directory keyed by the lock
// file's hash, filled by `npm ci` once (a failed or partial install is
// never used: it is renamed into place only when complete).
func nodeModules(t *testing.T) string {
	return nodeModulesOf(t, "testdata/node", "redlock")
}

// nodeModulesOf is nodeModules for the package in pkgDir; probe is a
// package whose directory shows that an install is complete.
func nodeModulesOf(t *testing.T, pkgDir, probe string) string {
	t.Helper()
	src, err := filepath.Abs(pkgDir)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(src, "node_modules", probe)); err == nil && st.IsDir() {
		return filepath.Join(src, "node_modules")
	}
	npm := needProgram(t, "npm")
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "locknode-compat", "node-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", probe)); err == nil {
		return filepath.Join(dir, "node_modules")
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	if err != nil {
		missing(t, "npm ci failed (no registry?): "+err.Error()+": "+strings.TrimSpace(string(out)))
	}
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, os.ErrExist) {
		// Another run may have won the race; use whichever is complete.
		if _, serr := os.Stat(filepath.Join(dir, "node_modules", probe)); serr != nil {
			t.Fatalf("install node modules: %v", err)
		}
	}
	t.Logf("installed node modules in %s", dir)
	return filepath.Join(dir, "node_modules")
}

// runNode starts testdata/node/redlock.cjs with the modules found by
// nodeModules (through NODE_PATH, so the source tree stays clean).
func runNode(t *testing.T, name string, args ...string) *child {
	t.Helper()
	node := needProgram(t, "node")
	mods := nodeModules(t)
	script, err := filepath.Abs("testdata/node/redlock.cjs")
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "NODE_PATH="+mods)
	return startChild(t, name, filepath.Dir(script), env, node, append([]string{script}, args...)...)
}

// TestNodeRedlock: node-redlock v5 given ONE endpoint (its acquire checks
// only EXISTS, so it cannot vote like redsync across nodes of one cluster)
// over ioredis 5 (RESP2) and ioredis 6 (RESP3, HELLO 3 at connect):
// acquire of two resources, exclusion, extend, release, and using() under
// contention. Run against a follower, so every write is forwarded.
func TestNodeRedlock(t *testing.T) {
	tc := newCluster(t, 3)
	follower := (tc.leader(10*time.Second) + 1) % 3
	c := runNode(t, "node suite", "suite", tc.resp[follower], uniq("redlock"))
	for _, client := range []string{"ioredis5", "ioredis6"} {
		for _, step := range []string{"handshake", "acquire", "exclusive", "extend", "release", "reacquire", "using"} {
			c.expect("ok "+client+" "+step, 60*time.Second)
		}
	}
	c.finish(10 * time.Second)
}

// TestNodeIORedisSentinel: ioredis in Sentinel mode given every node as a
// sentinel (any service name) finds a node, and after that node is killed
// finds another one; node-redlock over that client keeps working.
func TestNodeIORedisSentinel(t *testing.T) {
	tc := newCluster(t, 3)
	c := runNode(t, "node sentinel", "sentinel", strings.Join(tc.resp, ","), uniq("redlock"))
	line, ok := c.expectLine(func(l string) bool { return strings.HasPrefix(l, "connected ") }, 60*time.Second)
	if !ok {
		t.Fatalf("node sentinel: %s", line)
	}
	port := strings.TrimPrefix(line, "connected ")
	victim := -1
	for i, a := range tc.resp {
		if strings.HasSuffix(a, ":"+port) {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatalf("ioredis connected to port %s, not a node's RESP port (%v)", port, tc.resp)
	}
	t.Logf("ioredis uses node %d; killing it", victim)
	tc.kill(victim)
	c.send("killed")
	line, ok = c.expectLine(func(l string) bool { return strings.HasPrefix(l, "reconnected ") }, 60*time.Second)
	if !ok {
		t.Fatalf("node sentinel: %s", line)
	}
	now := strings.TrimPrefix(line, "reconnected ")
	if _, err := strconv.Atoi(now); err != nil || now == port {
		t.Fatalf("reconnected to %q after killing port %s", now, port)
	}
	c.finish(10 * time.Second)
}
