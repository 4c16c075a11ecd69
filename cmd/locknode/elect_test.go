package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
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

// elect --observe prints the election's leader (none at first), each
// change, and ends with exit 0 when interrupted.
func TestElectObserve(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := httpapitest.NewServer(t, fake)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	octx, stop := context.WithCancel(ctx)
	defer stop()
	var out, jout, errb syncBuffer
	done := make(chan int, 2)
	// Each ends when octx is cancelled.
	go func() { done <- runElect(octx, []string{"--observe", "svc", "--endpoints", srv.URL}, &out, &errb) }()
	go func() {
		done <- runElect(octx, []string{"svc", "--observe", "--json", "--endpoints", srv.URL}, &jout, &errb)
	}()
	waitUntil(t, "no leader shown", func() bool {
		return strings.Contains(out.String(), "(no leader)") && strings.Contains(jout.String(), `"election":"svc"`)
	})
	sess, err := fake.OpenSession(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ld, err := fake.Campaign(ctx, api.CampaignRequest{Election: "svc", Value: "node-a", Session: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("node-a (fence %d)", ld.Fence)
	waitUntil(t, "the leader shown", func() bool {
		return strings.Contains(out.String(), want) && strings.Contains(jout.String(), `"value":"node-a"`)
	})
	if err := fake.Resign(ctx, ld); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the resignation shown", func() bool { return strings.Count(out.String(), "(no leader)") == 2 })
	if strings.Contains(jout.String(), ld.Token) {
		t.Fatalf("the campaign's token was printed: %s", jout.String())
	}
	stop()
	for range 2 {
		if code := <-done; code != 0 {
			t.Fatalf("exit %d; stderr %s", code, errb.String())
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || lines[1] != want {
		t.Fatalf("output:\n%s", out.String())
	}
}

func TestElectObserveUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--observe"},
		{"--observe", "a", "b"},
		{"--observe", "a", "--", "true"},
		{"--json", "a", "v", "--", "true"},
	} {
		if code := runElect(context.Background(), args, &syncBuffer{}, &syncBuffer{}); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
	}
	if code := runElect(context.Background(), []string{"--observe", "a", "--endpoints", "127.0.0.1:1", "--timeout-not-a-flag"}, &syncBuffer{}, &syncBuffer{}); code != exitUsage {
		t.Errorf("unknown flag: exit %d", code)
	}
}
