package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/transport"
)

// TestSnapshotSaveRestore: a snapshot taken from a running 3-node cluster
// (through a follower) starts a new 3-node cluster, on other addresses,
// with every lock, fence, session, waiter, value and script of the old
// one; fences granted by the new cluster are above every old fence.
func TestSnapshotSaveRestore(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	ctx := ctxT(t, 2*time.Minute)
	l := tc.leader(10 * time.Second)

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
	if _, err := l.FenceCheck(ctx, "res", b.Fence); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []*fsm.Command{
		{Op: fsm.OpRedis, Args: [][]byte{[]byte("SET"), []byte("rl"), []byte("tok"), []byte("NX"), []byte("PX"), []byte("600000")}},
		{Op: fsm.OpRedis, Args: [][]byte{[]byte("HSET"), []byte("h"), []byte("f"), []byte("v")}},
		{Op: fsm.OpScriptLoad, Script: []byte("return 'kept'")},
	} {
		if r, err := l.Apply(ctx, cmd); err != nil || r.Err != nil || r.Reply.IsError() {
			t.Fatalf("%v: %v %v %+v", cmd.Args, err, r.Err, r.Reply)
		}
	}
	var buf bytes.Buffer
	var saved uint64
	if err := tc.follower().WriteSnapshot(ctx, &buf, func(idx uint64) { saved = idx }); err != nil {
		t.Fatal(err)
	}
	if saved < l.AppliedIndex()-1 || saved == 0 {
		t.Fatalf("snapshot at index %d, leader applied %d", saved, l.AppliedIndex())
	}
	// The term of the entry at the snapshot's index, for the backup file:
	// known, and no later than the follower's current term.
	f := tc.follower()
	cur, _ := strconv.ParseUint(f.raft.Stats()["term"], 10, 64)
	if term := f.SnapshotTerm(saved); term == 0 || term > cur {
		t.Fatalf("SnapshotTerm(%d) = %d, current term %d", saved, term, cur)
	}
	if term := f.SnapshotTerm(saved + 1_000_000); term != 0 {
		t.Fatalf("SnapshotTerm of an index beyond the log = %d", term)
	}
	// Every fence is an entry's index: none in the snapshot is above it.
	maxFence := max(a.Fence, b.Fence)

	// The new cluster: other addresses, data directories prepared from
	// the snapshot, no bootstrap.
	var peers []Peer
	trs := make([]*transport.Transport, 3)
	for i := range trs {
		if trs[i], err = transport.New(transport.Config{BindAddr: "127.0.0.1:0"}); err != nil {
			t.Fatal(err)
		}
		peers = append(peers, Peer{ID: fmt.Sprintf("m%d", i+1), Addr: trs[i].Addr().String()})
	}
	nc := &testCluster{t: t}
	for i := range trs {
		dir := filepath.Join(t.TempDir(), "data")
		idx, err := RestoreSnapshot(dir, bytes.NewReader(buf.Bytes()), peers)
		if err != nil || idx != saved {
			t.Fatalf("restore: %d %v (saved %d)", idx, err, saved)
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
	nl := nc.leader(20 * time.Second)
	for _, n := range nc.nodes {
		var problems []string
		err := n.Read(ctx, false, func(tb *fsm.Table, now int64) {
			if h, ok := tb.HoldOf("a", "o1", now); !ok || h.Fence != a.Fence {
				problems = append(problems, fmt.Sprintf("hold a %+v", h))
			}
			if h, ok := tb.HoldOf("b", "o2", now); !ok || h.Fence != b.Fence || h.Session != sess.ID {
				problems = append(problems, fmt.Sprintf("hold b %+v", h))
			}
			if _, ok := tb.Session(sess.ID, now); !ok {
				problems = append(problems, "session")
			}
			if _, ok := tb.ScriptBySHA(fsm.ScriptSHA([]byte("return 'kept'"))); !ok {
				problems = append(problems, "script")
			}
		})
		if err != nil || len(problems) > 0 {
			t.Fatalf("node %s: %v %v", n.ID(), err, problems)
		}
	}
	for _, args := range [][]string{{"GET", "rl"}, {"HGET", "h", "f"}} {
		var bs [][]byte
		for _, a := range args {
			bs = append(bs, []byte(a))
		}
		r, err := nl.Apply(ctx, &fsm.Command{Op: fsm.OpRedis, Args: bs})
		if err != nil || r.Reply.Str != map[string]string{"GET": "tok", "HGET": "v"}[args[0]] {
			t.Fatalf("%v: %+v %v", args, r.Reply, err)
		}
	}
	// The fence registry kept the old fence; a new grant is above it.
	if fr, err := nl.FenceCheck(ctx, "res", b.Fence-1); err != nil || fr.OK || fr.Highest != b.Fence {
		t.Fatalf("stale fence after the restore: %+v %v", fr, err)
	}
	c, err := nl.TryAcquire(ctx, api.AcquireRequest{Key: "c", Owner: "o3", TTLMs: 60_000})
	if err != nil {
		t.Fatal(err)
	}
	if c.Fence <= maxFence || c.Fence <= saved {
		t.Fatalf("new fence %d, old highest %d, snapshot index %d", c.Fence, maxFence, saved)
	}
	// The session lives on: a keep-alive works.
	if _, err := nl.KeepAlive(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreSnapshotRefuses: a restore never overwrites a data
// directory, and refuses a file that is not a snapshot or peers that
// make no cluster, leaving the directory empty.
func TestRestoreSnapshotRefuses(t *testing.T) {
	tb := fsm.New(fsm.Config{})
	tb.Apply(1, &fsm.Command{Op: fsm.OpAcquire, Key: "k", Owner: "o", TTL: 1000, Time: 1})
	var good bytes.Buffer
	if err := tb.Snapshot(&good); err != nil {
		t.Fatal(err)
	}
	peers := []Peer{{ID: "a", Addr: "127.0.0.1:1"}}
	used := t.TempDir()
	if err := os.WriteFile(filepath.Join(used, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		dir   string
		data  []byte
		peers []Peer
		want  error
	}{
		{"dir in use", used, good.Bytes(), peers, ErrDataDirInUse},
		{"garbage", t.TempDir(), []byte("not a snapshot"), peers, ErrBadSnapshot},
		{"truncated", t.TempDir(), good.Bytes()[:good.Len()/2], peers, ErrBadSnapshot},
		{"no peers", t.TempDir(), good.Bytes(), nil, nil},
		{"repeated peer", t.TempDir(), good.Bytes(), append(peers, peers...), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RestoreSnapshot(tc.dir, bytes.NewReader(tc.data), tc.peers)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.dir != used {
				if entries, _ := os.ReadDir(tc.dir); len(entries) != 0 {
					t.Fatalf("left behind %v", entries)
				}
			}
		})
	}
	if entries, _ := os.ReadDir(used); len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), "x") {
		t.Fatalf("used dir changed: %v", entries)
	}
}
