package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/internal/simdisk"
	"github.com/locknode/locknode/transport"
)

// TestSimulatedDiskCrashKeepsAcknowledged runs a node on the simulated
// disk (Config.Disk), crashes it three times — the node killed, then
// whatever it had not synced lost or torn — and restarts it each time
// from its data directory: every grant it acknowledged before a crash is
// still held, with its fence.
func TestSimulatedDiskCrashKeepsAcknowledged(t *testing.T) {
	disk := simdisk.New(7)
	cfg := cluster.DefaultConfig()
	cfg.ID = "n1"
	cfg.DataDir = t.TempDir()
	cfg.Bootstrap = true
	cfg.Disk = disk
	tr, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.BindAddr = tr.Addr().String()
	cfg.Peers = []cluster.Peer{{ID: cfg.ID, Addr: cfg.BindAddr}}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	acked := map[string]uint64{} // key -> fence
	var node *cluster.Node
	defer func() {
		if node != nil {
			node.Kill()
		}
	}()
	for round := range 4 {
		if round > 0 {
			if tr, err = transport.New(transport.Config{BindAddr: cfg.BindAddr}); err != nil {
				t.Fatal(err)
			}
		}
		cfg.Transport = tr
		if node, err = cluster.Start(ctx, cfg); err != nil {
			t.Fatalf("round %d: start after a crash: %v", round, err)
		}
		if err := node.WaitLeader(ctx); err != nil {
			t.Fatal(err)
		}
		for key, fence := range acked {
			info, err := node.Inspect(ctx, key, api.ReadOptions{})
			if err != nil {
				t.Fatalf("round %d: %s: %v", round, key, err)
			}
			if len(info.Holders) != 1 || info.Holders[0].Owner != "o-"+key || info.Fence != fence {
				t.Fatalf("round %d: acknowledged grant of %s (fence %d) lost after a crash: %+v", round, key, fence, info)
			}
		}
		if round == 3 {
			break
		}
		for i := range 50 {
			key := fmt.Sprintf("k%d-%d", round, i)
			l, err := node.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "o-" + key, TTLMs: int64(time.Hour / time.Millisecond)})
			if err != nil {
				t.Fatal(err)
			}
			acked[key] = l.Fence
		}
		if err := node.Kill(); err != nil {
			t.Logf("kill: %v", err)
		}
		node = nil
		if err := disk.Crash(true); err != nil {
			t.Fatalf("round %d: crash: %v", round, err)
		}
	}
	if disk.Crashes() != 3 || len(acked) != 150 {
		t.Fatalf("%d crashes, %d grants; want 3 and 150", disk.Crashes(), len(acked))
	}
}
