package cluster

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/fsm"
)

// Every node says which cluster versions it runs, the active one shows in
// the status, and Upgrade with nothing newer to activate changes nothing.
func TestClusterVersionAdvertised(t *testing.T) {
	tc := newTestCluster(t, 3, func(c *Config) { c.UpgradeCheckInterval = 10 * time.Millisecond })
	l := tc.leader(10 * time.Second)
	f := tc.follower()
	res, err := f.Upgrade(ctxT(t, 5*time.Second))
	if err != nil || res.ClusterVersion != fsm.MaxClusterVersion || len(res.Members) != 3 {
		t.Fatalf("upgrade: %+v %v", res, err)
	}
	for id, r := range res.Members {
		if r != LocalVersions().String() {
			t.Errorf("member %s runs %v, want %v", id, r, LocalVersions())
		}
	}
	for _, n := range tc.nodes {
		// Applied by a quorum when Upgrade returned; this node may follow.
		tc.eventually(5*time.Second, n.ID()+" at the highest version", func() bool { return n.ClusterVersion() == fsm.MaxClusterVersion })
		st, err := n.Status(ctxT(t, time.Second))
		if err != nil || st.ClusterVersion != fsm.MaxClusterVersion || st.ClusterVersions != LocalVersions().String() || st.Halted != "" {
			t.Fatalf("%s status: %+v %v", n.ID(), st, err)
		}
	}
	for _, a := range l.PeerAddrs(ctxT(t, 5*time.Second)) {
		if a.Versions != LocalVersions() {
			t.Errorf("peer %s: versions %v", a.ID, a.Versions)
		}
	}
}

// The leader refuses a joiner whose range does not include the active
// version, with ErrVersionRefused, and leaves the configuration as it was;
// a joiner whose range includes it is let in.
func TestJoinRefusedOutsideVersionRange(t *testing.T) {
	tc := newTestCluster(t, 1, nil)
	n := tc.nodes[0]
	err := n.addVoter(ctxT(t, 5*time.Second), "future", "127.0.0.1:1", VersionRange{fsm.MaxClusterVersion + 1, fsm.MaxClusterVersion + 2}, false)
	if !errors.Is(err, ErrVersionRefused) || !strings.Contains(err.Error(), "future runs cluster versions") {
		t.Fatalf("join of a node that does not run the active version: %v", err)
	}
	st, _ := n.Status(ctxT(t, time.Second))
	if len(st.Members) != 1 {
		t.Fatalf("members after a refused join: %+v", st.Members)
	}
	// Over the RPC, as a joiner sends it (the refusal is an error text).
	resp, err := n.tr.Call(ctxT(t, 5*time.Second), n.Addr(), appendJoin("future", "127.0.0.1:1", VersionRange{7, 9}))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := decodeStatus(resp); err == nil || !strings.Contains(err.Error(), ErrVersionRefused.Error()) {
		t.Fatalf("rpc join: %v", err)
	}
}

// An entry this binary cannot apply halts each node that meets it: the
// entry and the ones after it are not applied, the node is not ready and
// says why, and it writes no snapshot.
func TestHaltOnEntryFromNewerVersion(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	l := tc.leader(10 * time.Second)
	before := l.AppliedIndex()
	// An op this binary does not know, as a newer leader would write it.
	f := l.raft.Apply([]byte{1, 240, 0}, 0)
	// The leader halts applying it and shuts raft down, which may answer
	// the future before its apply does: the entry was committed either way.
	if err := f.Error(); err != nil && !errors.Is(err, raft.ErrRaftShutdown) {
		t.Fatal(err)
	}
	// A quorum stored it; once they halt, the third may never receive it.
	tc.eventually(10*time.Second, "a quorum halted", func() bool {
		c := 0
		for _, n := range tc.nodes {
			if n.Halted() != nil {
				c++
			}
		}
		return c >= 2
	})
	for _, n := range tc.nodes {
		if n.Halted() == nil {
			continue
		}
		if !errors.Is(n.Halted(), fsm.ErrNeedVersion) {
			t.Fatalf("%s halted with %v", n.ID(), n.Halted())
		}
		if err := n.Ready(ctxT(t, time.Second)); !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "newer locknode") {
			t.Fatalf("%s ready: %v", n.ID(), err)
		}
		st, _ := n.Status(ctxT(t, time.Second))
		if !strings.Contains(st.Halted, "op 240") {
			t.Fatalf("%s status halted %q", n.ID(), st.Halted)
		}
		if a := n.AppliedIndex(); a >= f.Index() || a < before {
			t.Fatalf("%s applied %d, the refused entry is %d", n.ID(), a, f.Index())
		}
		if _, err := (*fsmAdapter)(n).Snapshot(); err == nil {
			t.Fatalf("%s snapshotted a halted table", n.ID())
		}
	}
}

// TestEveryRPCKindHasAVersion fails when a peer RPC kind is added without
// the cluster version that introduced it (rpcKinds).
func TestEveryRPCKindHasAVersion(t *testing.T) {
	found := 0
	for _, d := range rpcKindDecls(t) {
		k, err := strconv.Atoi(d.value)
		if err != nil || k < 0 || k > 255 {
			t.Fatalf("%s: %s = %s", d.file, d.name, d.value)
		}
		found++
		if r := rpcByKind[k]; r == nil || r.version == 0 || r.version > fsm.MaxClusterVersion {
			t.Errorf("RPC kind %s (%d) has no cluster version in rpcKinds (rpctable.go): list it with the version that introduces it, and use it only once that version is active (docs/DESIGN.md)", d.name, k)
		}
	}
	if found < 8 {
		t.Fatalf("found %d RPC kinds", found)
	}
}
