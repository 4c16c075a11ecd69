package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/locknode/locknode/httpapi/httpapitest"
)

// TestElectRunsTheCommandWhileLeading: the child sees the fence, the
// election shows VALUE while it runs, its exit code is returned and the
// leadership is resigned after it.
func TestElectRunsTheCommandWhileLeading(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := httpapitest.NewServer(t, fake)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	obs, err := fake.Observe(ctx, "svc")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	started, proceed := filepath.Join(dir, "started"), filepath.Join(dir, "proceed")
	script := `printf '%s %s %s' "$LOCKNODE_FENCE" "$LOCKNODE_ELECTION" "$LOCKNODE_VALUE" > "$1.tmp"; mv "$1.tmp" "$1"; while [ ! -e "$2" ]; do sleep 0.01; done; exit 3`
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	// Ends when runElect returns (the child exits).
	go func() {
		done <- runElect(context.Background(), []string{"svc", "node-a", "--endpoints", srv.URL, "--ttl", "5s",
			"--", "/bin/sh", "-c", script, "sh", started, proceed}, stdout, stderr)
	}()
	waitUntil(t, "the child to start", func() bool { return fileExists(started) })
	got, _ := os.ReadFile(started)
	var leader uint64
	for leader == 0 {
		select {
		case l := <-obs:
			if l.Value == "node-a" {
				leader = l.Fence
			}
		case <-ctx.Done():
			t.Fatal("the election never showed node-a")
		}
	}
	if want := strconv.FormatUint(leader, 10) + " svc node-a"; string(got) != want {
		t.Fatalf("child saw %q, want %q", got, want)
	}
	if err := os.WriteFile(proceed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 3 {
			t.Fatalf("exit code %d, want the child's 3; stderr %s", code, stderr)
		}
	case <-ctx.Done():
		t.Fatal("locknode elect did not return")
	}
	for {
		select {
		case l := <-obs:
			if l.Value == "" {
				return // resigned
			}
		case <-ctx.Done():
			t.Fatal("the leadership outlived the child")
		}
	}
}

func TestElectUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"svc"},
		{"svc", "v"},
		{"svc", "v", "--ttl", "0s", "--", "true"},
	} {
		if code := runElect(context.Background(), args, &syncBuffer{}, &syncBuffer{}); code != exitUsage {
			t.Fatalf("%q: exit code %d, want %d", args, code, exitUsage)
		}
	}
}
