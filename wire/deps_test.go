package wire_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// forbiddenDeps are the packages a program that only talks to a cluster
// must not link: the server, the dashboard, raft and prometheus. A
// prefix ending in "/" matches every package below it; one without
// matches the path itself and everything that starts with it (so
// hashicorp/raft covers raft-boltdb and raft-wal too).
var forbiddenDeps = []string{
	"github.com/locknode/locknode/httpapi",
	"github.com/locknode/locknode/cluster",
	"github.com/locknode/locknode/fsm",
	"github.com/locknode/locknode/ui",
	"github.com/locknode/locknode/transport",
	"github.com/locknode/locknode/redisbridge",
	"github.com/hashicorp/raft",
	"github.com/prometheus/",
}

// TestClientLinksNoServer: the client and the fencing middleware link
// the HTTP contract (this package) and api, never the server they talk
// to. It asks the go tool what they import, tests included.
func TestClientLinksNoServer(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("LOCKNODE_CI") == "1" {
			t.Fatalf("LOCKNODE_CI=1 but the go tool is not on PATH: %v", err)
		}
		t.Skipf("the go tool is not on PATH (%v): cannot list dependencies", err)
	}
	for _, pkg := range []string{"github.com/locknode/locknode/client", "github.com/locknode/locknode/fence"} {
		out, err := exec.CommandContext(t.Context(), goTool, "list", "-deps", pkg).Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr)
		}
		deps := strings.Fields(string(out))
		if len(deps) == 0 || deps[len(deps)-1] != pkg {
			t.Fatalf("go list -deps %s did not list the package itself last: %q", pkg, deps)
		}
		sawWire := false
		for _, d := range deps {
			if d == "github.com/locknode/locknode/wire" {
				sawWire = true
			}
			for _, bad := range forbiddenDeps {
				if strings.HasPrefix(d, bad) {
					t.Errorf("%s links %s (forbidden: %s)", pkg, d, bad)
				}
			}
		}
		if !sawWire {
			t.Errorf("%s does not link package wire: the check lists the wrong thing", pkg)
		}
	}
}
