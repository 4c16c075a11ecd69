package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi/httpapitest"
)

// syncBuffer is a bytes.Buffer safe for the child's copy goroutine and
// the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// processGone: no such process, or a zombie nobody reaped yet.
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}

type lockRun struct {
	code           int
	stdout, stderr *syncBuffer
	done           chan struct{}
}

func startLock(t *testing.T, args ...string) *lockRun {
	r := &lockRun{stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	// Ends when runLock returns (the child exits or is killed).
	go func() {
		defer close(r.done)
		r.code = runLock(context.Background(), args, r.stdout, r.stderr)
	}()
	return r
}

func (r *lockRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		t.Fatal("locknode lock did not return")
	}
	return r.code
}

func TestLockPassesTheFenceAndTheExitCode(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := httpapitest.NewServer(t, fake)
	// Another grant first, so the fence is not simply 1.
	if _, err := fake.TryAcquire(context.Background(), api.AcquireRequest{Key: "other", Owner: "x", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	started, proceed := filepath.Join(dir, "started"), filepath.Join(dir, "proceed")
	script := `printf '%s %s' "$LOCKNODE_FENCE" "$LOCKNODE_LOCK" > "$1"; while [ ! -e "$2" ]; do sleep 0.01; done; echo out; exit 3`
	r := startLock(t, "job", "--endpoints", srv.URL, "--ttl", "5s", "--", "/bin/sh", "-c", script, "sh", started, proceed)
	waitUntil(t, "the child to start", func() bool { return fileExists(started) })
	waitUntil(t, "the child to write", func() bool { b, _ := os.ReadFile(started); return len(b) > 0 })
	got, _ := os.ReadFile(started)
	owner, fence, held := fake.Holder("job")
	if !held || owner == "" {
		t.Fatal("the lock is not held while the child runs")
	}
	if want := strconv.FormatUint(fence, 10) + " job"; string(got) != want {
		t.Fatalf("child saw %q, want %q", got, want)
	}
	if err := os.WriteFile(proceed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t); code != 3 {
		t.Fatalf("exit code %d, want the child's 3; stderr %s", code, r.stderr)
	}
	if r.stdout.String() != "out\n" {
		t.Fatalf("stdout %q", r.stdout.String())
	}
	if _, _, held := fake.Holder("job"); held {
		t.Fatal("the lock outlived the child")
	}
}

func TestLockStopsTheChildBeforeTheLeaseCanBeLost(t *testing.T) {
	cases := []struct {
		name   string
		script string
		grace  string
		code   int
	}{
		// sh and its background sleep are one process group: SIGTERM
		// reaches both.
		{"SIGTERM to the group", `sleep 60 & echo $! > "$1"; wait`, "5s", 128 + 15},
		// A child that ignores SIGTERM is killed after the grace period.
		{"SIGKILL after grace", `trap '' TERM; sleep 60 & echo $! > "$1"; while :; do sleep 0.05; done`, "100ms", 128 + 9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := httpapitest.NewFake()
			srv := httpapitest.NewServer(t, fake)
			pidFile := filepath.Join(t.TempDir(), "pid")
			r := startLock(t, "job", "--endpoints", srv.URL, "--ttl", "2s", "--grace", tc.grace, "--", "/bin/sh", "-c", tc.script, "sh", pidFile)
			waitUntil(t, "the child to start", func() bool { b, _ := os.ReadFile(pidFile); return bytes.HasSuffix(b, []byte("\n")) })
			b, _ := os.ReadFile(pidFile)
			grandchild, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			owner, _, _ := fake.Holder("job")
			srv.SetMode(httpapitest.Down) // the cluster becomes unreachable
			waitUntil(t, "the process group to die", func() bool { return processGone(grandchild) })
			// The group is gone while the server still counts the lease
			// as ours: nobody else could have held the lock yet.
			if o, _, held := fake.Holder("job"); !held || o != owner {
				t.Fatalf("the child outlived the lease; stderr %s", r.stderr)
			}
			code := r.wait(t)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d; stderr %s", code, tc.code, r.stderr)
			}
			if !strings.Contains(r.stderr.String(), "jeopardy") {
				t.Fatalf("stderr does not say why: %s", r.stderr)
			}
		})
	}
}

func TestLockBusyAndUsage(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := httpapitest.NewServer(t, fake)
	if _, err := fake.TryAcquire(context.Background(), api.AcquireRequest{Key: "job", Owner: "x", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"held, no wait", []string{"job", "--endpoints", srv.URL, "--wait", "0", "--", "true"}, exitLockBusy},
		{"held, wait runs out", []string{"--endpoints", srv.URL, "--wait", "50ms", "job", "--", "true"}, exitLockBusy},
		{"no command", []string{"job", "--endpoints", srv.URL}, exitUsage},
		{"no name", []string{}, exitUsage},
		{"bad flag", []string{"job", "--bogus", "--", "true"}, exitUsage},
		{"bad ttl", []string{"job", "--ttl", "-1s", "--", "true"}, exitUsage},
		{"bad endpoint", []string{"job", "--endpoints", "ftp://x", "--", "true"}, exitUsage},
		{"cluster down", []string{"free", "--endpoints", "http://127.0.0.1:1", "--", "true"}, exitLockFailed},
		{"no such program", []string{"free", "--endpoints", srv.URL, "--", "/nonexistent/prog"}, exitStartFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb syncBuffer
			if code := runLock(context.Background(), tc.args, &out, &errb); code != tc.code {
				t.Fatalf("code %d, want %d; stderr %s", code, tc.code, errb.String())
			}
		})
	}
	if _, _, held := fake.Holder("free"); held {
		t.Fatal("a failed start left the lock held")
	}
}

func TestStatusAndLocksCommands(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := httpapitest.NewServer(t, fake)
	for _, k := range []string{"a/1", "a/2", "b/1"} {
		if _, err := fake.TryAcquire(context.Background(), api.AcquireRequest{Key: k, Owner: "o-" + k, TTLMs: 60000}); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb syncBuffer
	if code := runStatus(context.Background(), []string{"--endpoints", srv.URL, "--json"}, &out, &errb); code != 0 {
		t.Fatalf("status: %d %s", code, errb.String())
	}
	var st api.Status
	if err := json.Unmarshal([]byte(out.String()), &st); err != nil || st.ID != "fake" || st.Locks != 3 {
		t.Fatalf("status JSON %q: %v", out.String(), err)
	}
	out = syncBuffer{}
	if code := runLocks(context.Background(), []string{"--endpoints", srv.URL, "--prefix", "a/", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("locks: %d %s", code, errb.String())
	}
	var infos []api.LockInfo
	if err := json.Unmarshal([]byte(out.String()), &infos); err != nil || len(infos) != 2 || infos[1].Key != "a/2" || infos[1].Holders[0].Owner != "o-a/2" {
		t.Fatalf("locks JSON %q: %v", out.String(), err)
	}
	out = syncBuffer{}
	if code := runLocks(context.Background(), []string{"--endpoints", srv.URL}, &out, &errb); code != 0 || !strings.Contains(out.String(), "o-b/1") {
		t.Fatalf("locks table: %d %q", code, out.String())
	}
}

func TestJoinCommand(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := httpapitest.NewServer(t, fake)
	var out, errb syncBuffer
	if code := runJoin(context.Background(), []string{"--endpoints", srv.URL, "--id", "n4", "--raft-addr", "10.0.0.4:7000"}, &out, &errb); code != 0 {
		t.Fatalf("join: %d %s", code, errb.String())
	}
	st, _ := fake.Status(context.Background())
	if len(st.Members) != 2 || st.Members[1].ID != "n4" || st.Members[1].Address != "10.0.0.4:7000" {
		t.Fatalf("members %+v", st.Members)
	}
	if code := runJoin(context.Background(), []string{"--endpoints", srv.URL, "--id", "n4"}, &out, &errb); code != exitUsage {
		t.Fatalf("join without address: %d", code)
	}
}
