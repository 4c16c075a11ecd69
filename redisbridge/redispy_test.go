package redisbridge

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// pythonWithRedis finds a python3 that can import redis (redis-py).
func pythonWithRedis(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import redis").Run() == nil {
			return path
		}
	}
	if os.Getenv("LOCKNODE_CI") == "1" {
		t.Fatal("no python3 with the redis module (LOCKNODE_CI=1)")
	}
	t.Skip("no python3 with the redis module")
	return ""
}

// TestRedisPy runs redis-py's Lock (its Lua acquire/extend/reacquire/
// release scripts via EVALSHA and SCRIPT LOAD), a MULTI pipeline,
// Sentinel discovery and pub/sub against the bridge.
func TestRedisPy(t *testing.T) {
	py := pythonWithRedis(t)
	s, _ := testServer(t, Config{})
	host, port, _ := net.SplitHostPort(s.Addr())
	out, err := exec.Command(py, "testdata/redispy_lock.py", host, port).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("redis-py: %v\n%s", err, out)
	}
}
