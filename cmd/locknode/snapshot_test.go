package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/testcluster"
	"github.com/locknode/locknode/transport"
)

// TestSnapshotCommand: `snapshot save` from a 3-node cluster, `snapshot
// restore` into three fresh data directories, and the new 3-node cluster
// holds every lock (with its fence) and session; its fences continue
// above the old ones.
func TestSnapshotCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two raft clusters")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	old := testcluster.New(t, 3, testcluster.Options{NoRESP: true})
	if _, err := old.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	l := old.Leader()
	sess, err := l.OpenSession(ctx, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "a", Owner: "o1", TTLMs: 600_000})
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "b", Owner: "o2", Session: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		var out, errb syncBuffer
		code := runSnapshot(ctx, args, &out, &errb)
		return code, out.String(), errb.String()
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "backup.snap")
	if code, _, errb := run("save", file, "--endpoints", "127.0.0.1:1"); code != exitLockFailed || !strings.Contains(errb, "LOCKNODE_ENDPOINTS") {
		t.Fatalf("save from nowhere: %d %s", code, errb)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("a failed save left %s: %v", file, err)
	}
	code, out, errb := run("save", file, "--endpoints", strings.Join(old.Endpoints(), ","))
	if code != 0 || !strings.Contains(out, "saved the snapshot at index") {
		t.Fatalf("save: %d %s %s", code, out, errb)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("save left temporary files: %v", entries)
	}

	// The new cluster, on new addresses.
	var peers []string
	trs := make([]*transport.Transport, 3)
	for i := range trs {
		if trs[i], err = transport.New(transport.Config{BindAddr: "127.0.0.1:0"}); err != nil {
			t.Fatal(err)
		}
		peers = append(peers, fmt.Sprintf("m%d=%s", i+1, trs[i].Addr()))
	}
	peerFlag := strings.Join(peers, ",")
	for _, bad := range [][]string{
		{"restore", file, "--id", "m1", "--peers", peerFlag},                        // no --data
		{"restore", file, "--data", t.TempDir(), "--id", "zz", "--peers", peerFlag}, // id not a peer
		{"restore", file, "--data", t.TempDir(), "--id", "m1", "--peers", "m1"},     // bad peers
		{"restore", file, "--data", t.TempDir(), "--id", "m1", "--peers", peerFlag, "--clock-base", "yesterday"},
		{"load", file}, // no such subcommand
		{"save"},       // no file
	} {
		if code, _, _ := run(bad...); code != exitUsage {
			t.Fatalf("%v: exit %d, want %d", bad, code, exitUsage)
		}
	}
	if code, _, errb := run("restore", file, "--data", dir, "--id", "m1", "--peers", peerFlag, "--clock-base", "keep"); code != exitLockFailed || !strings.Contains(errb, "not empty") {
		t.Fatalf("restore into a used directory: %d %s", code, errb)
	}
	// Several voters need one clock base for all: "now" would differ.
	noBase := filepath.Join(t.TempDir(), "data")
	if code, _, errb := run("restore", file, "--data", noBase, "--id", "m1", "--peers", peerFlag); code != exitUsage || !strings.Contains(errb, "--clock-base") {
		t.Fatalf("restore of 3 voters without --clock-base: %d %s", code, errb)
	}
	// A file that is no snapshot leaves no directory behind.
	garbage := filepath.Join(dir, "garbage.snap")
	if err := os.WriteFile(garbage, []byte("not a snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errb := run("restore", garbage, "--data", noBase, "--id", "m1", "--peers", peerFlag, "--clock-base", "keep"); code != exitLockFailed || !strings.Contains(errb, "not a valid snapshot") {
		t.Fatalf("restore of garbage: %d %s", code, errb)
	}
	if _, err := os.Stat(noBase); !os.IsNotExist(err) {
		t.Fatalf("a failed restore left %s: %v", noBase, err)
	}
	var nodes []*cluster.Node
	base := time.Now().UTC().Format(time.RFC3339Nano)
	for i, tr := range trs {
		data := filepath.Join(t.TempDir(), "data")
		id := fmt.Sprintf("m%d", i+1)
		code, out, errb := run("restore", file, "--data", data, "--id", id, "--peers", peerFlag, "--clock-base", base)
		if code != 0 || !strings.Contains(out, "locknode serve --id "+id) || !strings.Contains(out, "cluster clock moved from") {
			t.Fatalf("restore %s: %d %s %s", id, code, out, errb)
		}
		// The next node takes the base this restore printed.
		_, after, ok := strings.Cut(out, "--clock-base ")
		if !ok {
			t.Fatalf("restore %s printed no clock base for the other nodes: %s", id, out)
		}
		base, _, _ = strings.Cut(after, "\n")
		cfg := cluster.DefaultConfig()
		cfg.ID, cfg.DataDir, cfg.Transport, cfg.BindAddr = id, data, tr, tr.Addr().String()
		n, err := cluster.Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Kill() })
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		if err := n.WaitLeader(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		var problems []string
		err := n.Read(ctx, false, func(tb *fsm.Table, now int64) {
			if h, ok := tb.HoldOf("a", "o1", now); !ok || h.Fence != a.Fence {
				problems = append(problems, "hold a")
			}
			if h, ok := tb.HoldOf("b", "o2", now); !ok || h.Fence != b.Fence {
				problems = append(problems, "hold b")
			}
			if _, ok := tb.Session(sess.ID, now); !ok {
				problems = append(problems, "session")
			}
		})
		if err != nil || len(problems) > 0 {
			t.Fatalf("node %s: %v %v", n.ID(), err, problems)
		}
	}
	c, err := nodes[0].TryAcquire(ctx, api.AcquireRequest{Key: "c", Owner: "o3", TTLMs: 60_000})
	if err != nil {
		t.Fatal(err)
	}
	if c.Fence <= max(a.Fence, b.Fence) {
		t.Fatalf("fence %d after the restore, old fences %d and %d", c.Fence, a.Fence, b.Fence)
	}
	if _, err := nodes[1].TryAcquire(ctx, api.AcquireRequest{Key: "a", Owner: "o4", TTLMs: 60_000}); err == nil {
		t.Fatal("the restored lock a was granted to another owner")
	}
}

// TestParseClockBase: --clock-base takes now (one voter only), keep, an
// RFC 3339 time or Unix ms, and refuses a time far ahead of this clock.
func TestParseClockBase(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	for _, tc := range []struct {
		v      string
		voters int
		want   int64
		bad    string
	}{
		{"", 1, now.UnixMilli(), ""},
		{"now", 1, now.UnixMilli(), ""},
		{"keep", 3, 0, ""},
		{"1799999000000", 3, 1_799_999_000_000, ""},
		{now.Add(-time.Hour).UTC().Format(time.RFC3339), 3, now.Add(-time.Hour).UnixMilli(), ""},
		{now.Add(30 * time.Second).UTC().Format(time.RFC3339Nano), 3, now.Add(30 * time.Second).UnixMilli(), ""},
		{"", 3, 0, "one clock base given to every node"},
		{"now", 2, 0, "one clock base given to every node"},
		{now.Add(time.Hour).UTC().Format(time.RFC3339), 1, 0, "ahead of this machine's clock"},
		{"1800000000000000", 1, 0, "ahead of this machine's clock"}, // microseconds
		{"-5", 1, 0, "must be positive"},
		{"tomorrow", 1, 0, "want now, keep"},
	} {
		got, err := parseClockBase(tc.v, tc.voters, now)
		if tc.bad != "" {
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%q (%d voters): %d %v, want an error with %q", tc.v, tc.voters, got, err, tc.bad)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q (%d voters): %d %v, want %d", tc.v, tc.voters, got, err, tc.want)
		}
	}
}
