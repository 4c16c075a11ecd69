package lockservice_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoRaft: the lock service, and the HTTP test double built on
// its Local, link neither raft nor the node around it, so a test of an
// HTTP or RESP front end carries no raft. It asks the go tool what they
// import.
func TestLinksNoRaft(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("LOCKNODE_CI") == "1" {
			t.Fatalf("LOCKNODE_CI=1 but the go tool is not on PATH: %v", err)
		}
		t.Skipf("the go tool is not on PATH (%v): cannot list dependencies", err)
	}
	forbidden := []string{"github.com/hashicorp/raft", "github.com/locknode/locknode/transport"}
	for _, pkg := range []string{"github.com/locknode/locknode/cluster/lockservice", "github.com/locknode/locknode/httpapi/httpapitest"} {
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
		for _, d := range deps {
			if d == "github.com/locknode/locknode/cluster" {
				t.Errorf("%s links the cluster package", pkg)
			}
			for _, bad := range forbidden {
				if strings.HasPrefix(d, bad) {
					t.Errorf("%s links %s", pkg, d)
				}
			}
		}
	}
}
