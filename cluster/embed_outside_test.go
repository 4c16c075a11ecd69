package cluster_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/cluster"
)

// TestEmbedWithoutFork builds and runs a program in a module of its own
// that embeds a node the way a user's program does: it requires locknode
// (replaced by this checkout) and nothing else, so it gets upstream
// hashicorp/raft rather than the fork our go.mod replaces it with. It
// guards against cluster calling anything only the fork has.
func TestEmbedWithoutFork(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a separate module")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("LOCKNODE_CI") == "1" {
			t.Fatalf("LOCKNODE_CI=1 and no go tool on PATH: %v", err)
		}
		t.Skipf("no go tool on PATH: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	ourMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	ourSum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	// The embedder's go.mod: our requirements (so nothing new is
	// downloaded), ourselves from this checkout, and no other replace.
	var mod strings.Builder
	mod.WriteString("module example.com/embedder\n\n")
	for _, line := range strings.Split(string(ourMod), "\n") {
		switch {
		case strings.HasPrefix(line, "module "), strings.HasPrefix(line, "replace "):
		default:
			mod.WriteString(line + "\n")
		}
	}
	mod.WriteString("require github.com/locknode/locknode v0.0.0\n")
	mod.WriteString("replace github.com/locknode/locknode => " + root + "\n")

	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", mod.String())
	write("go.sum", string(ourSum))
	write("main.go", embedderMain)

	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if got := run("list", "-m", "github.com/hashicorp/raft"); strings.Contains(got, "=>") || !strings.HasPrefix(got, "github.com/hashicorp/raft v") {
		t.Fatalf("the embedder should get upstream raft, got %q", got)
	}
	out := run("run", ".")
	if !strings.Contains(out, "commit timeout 2ms") || !strings.Contains(out, "granted fence>0 true") || !strings.Contains(out, "released") {
		t.Fatalf("embedded node did not serve a lock:\n%s", out)
	}
}

const embedderMain = `package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster"
)

func main() {
	dir, err := os.MkdirTemp("", "embedder-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := cluster.DefaultConfig()
	// Upstream raft has no commit push: followers learn commits from the
	// leader's resends, so the default resend is short.
	fmt.Println("commit timeout", cfg.CommitTimeout)
	cfg.ID = "n1"
	cfg.DataDir = dir
	cfg.Bootstrap = true
	node, err := cluster.Start(ctx, cfg)
	if err != nil {
		panic(err)
	}
	defer node.Close()
	if err := node.WaitLeader(ctx); err != nil {
		panic(err)
	}
	lease, err := node.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 10000})
	if err != nil {
		panic(err)
	}
	fmt.Println("granted fence>0", lease.Fence > 0)
	if _, err := node.Release(ctx, api.ReleaseRequest{Key: "k", Owner: "o"}); err != nil {
		panic(err)
	}
	fmt.Println("released")
}
`

// TestForkDetected: this module builds with the fork, so the default
// CommitTimeout is the long one (TestEmbedWithoutFork sees the short one).
func TestForkDetected(t *testing.T) {
	if got := cluster.DefaultConfig().CommitTimeout; got != 50*time.Millisecond {
		t.Fatalf("CommitTimeout default %v with the fork, want 50ms", got)
	}
}
