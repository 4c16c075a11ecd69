package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/transport"
)

// TestRestoreRebasesTheClock: a backup taken ten minutes ago (its clock
// stamped then) restored with the clock base "now" gives a cluster whose
// clock (RESP TIME) follows wall time, while its lease keeps at least the
// time it had left at the backup: exactly as much, counted from the
// restore. All three nodes hold the same table.
func TestRestoreRebasesTheClock(t *testing.T) {
	const age, leaseLeft = int64(10 * 60_000), int64(10_000)
	past := time.Now().UnixMilli() - age
	tb := fsm.New(fsm.Config{})
	for i, c := range []*fsm.Command{
		{Op: fsm.OpSessionOpen, Session: "s", TTL: 60_000},
		{Op: fsm.OpAcquire, Key: "a", Owner: "o1", TTL: leaseLeft},
		{Op: fsm.OpRedis, Args: [][]byte{[]byte("SET"), []byte("v"), []byte("x"), []byte("PX"), []byte("30000")}},
	} {
		c.Time = past
		if r := tb.Apply(uint64(i+1), c); r.Err != nil || r.Reply.IsError() {
			t.Fatalf("%v: %v %+v", c.Op, r.Err, r.Reply)
		}
	}
	var snap bytes.Buffer
	if err := tb.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	oldHold, _ := tb.HoldOf("a", "o1", past)

	var peers []Peer
	trs := make([]*transport.Transport, 3)
	for i := range trs {
		var err error
		if trs[i], err = transport.New(transport.Config{BindAddr: "127.0.0.1:0"}); err != nil {
			t.Fatal(err)
		}
		peers = append(peers, Peer{ID: fmt.Sprintf("r%d", i+1), Addr: trs[i].Addr().String()})
	}
	restored := time.Now()
	base := restored.UnixMilli()
	nc := &testCluster{t: t}
	for i := range trs {
		dir := filepath.Join(t.TempDir(), "data")
		res, err := RestoreSnapshotWith(dir, bytes.NewReader(snap.Bytes()), peers, RestoreOptions{ClockBase: base})
		if err != nil || res.Index != 3 || res.From != past || res.To != base {
			t.Fatalf("restore: %+v %v (past %d, base %d)", res, err, past, base)
		}
		cfg := DefaultConfig()
		cfg.ID, cfg.DataDir, cfg.Transport, cfg.BindAddr = peers[i].ID, dir, trs[i], peers[i].Addr
		cfg.Logger = testLogger(t, cfg.ID)
		n, err := Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		nc.nodes = append(nc.nodes, n)
		t.Cleanup(func() { _ = n.Kill() })
	}
	ctx := ctxT(t, time.Minute)
	l := nc.leader(20 * time.Second)

	// TIME, as a Redis client sees it: the command's cluster time.
	r, err := l.Apply(ctx, &fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("TIME")}})
	wall := time.Now()
	if err != nil || len(r.Reply.Arr) != 2 {
		t.Fatalf("TIME: %+v %v", r.Reply, err)
	}
	sec, _ := strconv.ParseInt(r.Reply.Arr[0].Str, 10, 64)
	usec, _ := strconv.ParseInt(r.Reply.Arr[1].Str, 10, 64)
	clock := sec*1000 + usec/1000
	// Behind wall time by at most the time since the restore (the nodes
	// start after it), never ahead of it; without the re-base it would be
	// ten minutes behind.
	if behind := wall.UnixMilli() - clock; behind < -100 || behind > wall.Sub(restored).Milliseconds()+1000 {
		t.Fatalf("TIME %d is %d ms behind wall time %d; %v since the restore", clock, behind, wall.UnixMilli(), wall.Sub(restored))
	}

	shift := base - past
	var deadlines []int64
	for _, n := range nc.nodes {
		var problems []string
		err := n.Read(ctx, false, func(tb *fsm.Table, now int64) {
			h, ok := tb.HoldOf("a", "o1", now)
			switch {
			case !ok:
				problems = append(problems, "the lease is gone")
			case h.Deadline != oldHold.Deadline+shift || h.Granted != oldHold.Granted+shift:
				problems = append(problems, fmt.Sprintf("hold %+v, want deadline %d", h, oldHold.Deadline+shift))
			case h.Deadline-now+time.Since(restored).Milliseconds() < leaseLeft:
				// What is left plus what passed since the restore: never
				// less than what was left at the backup.
				problems = append(problems, fmt.Sprintf("%d ms left, %v after the restore", h.Deadline-now, time.Since(restored)))
			}
			deadlines = append(deadlines, h.Deadline)
			if s, ok := tb.Session("s", now); !ok || s.Deadline != past+60_000+shift {
				problems = append(problems, fmt.Sprintf("session %+v", s))
			}
		})
		if err != nil || len(problems) > 0 {
			t.Fatalf("node %s: %v %v", n.ID(), err, problems)
		}
	}
	if deadlines[0] != deadlines[1] || deadlines[1] != deadlines[2] {
		t.Fatalf("the nodes disagree: %v", deadlines)
	}
	pttl, err := l.Apply(ctx, &fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("PTTL"), []byte("v")}})
	if err != nil || pttl.Reply.Int+time.Since(restored).Milliseconds() < 30_000 || pttl.Reply.Int > 30_000 {
		t.Fatalf("PTTL v = %+v %v", pttl.Reply, err)
	}
}

// TestRestoreLeavesNothing: a failed restore leaves no directory it
// created (the data directory and any parent it made), and leaves a
// directory that existed where it was, empty.
func TestRestoreLeavesNothing(t *testing.T) {
	peers := []Peer{{ID: "a", Addr: "127.0.0.1:1"}}
	root := t.TempDir()
	for _, dir := range []string{filepath.Join(root, "data"), filepath.Join(root, "x", "y", "data")} {
		_, err := RestoreSnapshotWith(dir, bytes.NewReader([]byte("not a snapshot")), peers, RestoreOptions{ClockBase: time.Now().UnixMilli()})
		if !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("%s: %v", dir, err)
		}
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("left behind %v", entries)
	}
	existing := filepath.Join(root, "kept")
	if err := os.Mkdir(existing, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := RestoreSnapshot(existing, bytes.NewReader(nil), peers); !errors.Is(err, ErrBadSnapshot) {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(existing); err != nil || len(entries) != 0 {
		t.Fatalf("the existing directory: %v %v", entries, err)
	}
}
