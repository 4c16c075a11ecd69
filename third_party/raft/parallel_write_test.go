// Copyright (c) HashiCorp, Inc.
// SPDX-License-Identifier: MPL-2.0

// Tests of locknode's fork change (parallel_write.go, FORK.md).

package raft

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// gatedStore is an InmemStore whose StoreLogs can be held or failed
// on demand, to look at the cluster while the leader writes.
type gatedStore struct {
	*InmemStore

	mu      sync.Mutex
	gate    chan struct{} // non-nil: StoreLogs waits for it to close
	entered chan struct{} // closed when a StoreLogs has reached the gate
	fail    error         // returned by StoreLogs (after the gate)
}

func (g *gatedStore) StoreLogs(logs []*Log) error {
	g.mu.Lock()
	gate, entered, fail := g.gate, g.entered, g.fail
	g.entered = nil
	g.mu.Unlock()
	if entered != nil {
		close(entered)
	}
	if gate != nil {
		<-gate
	}
	if fail != nil {
		return fail
	}
	return g.InmemStore.StoreLogs(logs)
}

func (g *gatedStore) StoreLog(l *Log) error { return g.StoreLogs([]*Log{l}) }

// hold makes the next StoreLogs wait until the returned release is
// called; entered is closed once it waits. fail, if not nil, is what
// that StoreLogs (and every later one) returns.
func (g *gatedStore) hold(fail error) (entered <-chan struct{}, release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gate, e := make(chan struct{}), make(chan struct{})
	g.gate, g.entered, g.fail = gate, e, fail
	var once sync.Once
	return e, func() {
		once.Do(func() {
			g.mu.Lock()
			g.gate = nil
			g.mu.Unlock()
			close(gate)
		})
	}
}

type gatedCluster struct {
	rafts  []*Raft
	stores []*gatedStore
	fsms   []*MockFSM
}

func makeGatedCluster(t *testing.T) *gatedCluster {
	t.Helper()
	return makeGatedClusterConf(t, nil)
}

// makeGatedClusterConf is makeGatedCluster with every node's config
// passed through edit first (when not nil).
func makeGatedClusterConf(t *testing.T, edit func(*Config)) *gatedCluster {
	t.Helper()
	c := &gatedCluster{}
	var trans []*InmemTransport
	var servers []Server
	for i := 0; i < 3; i++ {
		addr, tr := NewInmemTransport("")
		trans = append(trans, tr)
		servers = append(servers, Server{Suffrage: Voter, ID: ServerID(fmt.Sprintf("s%d", i)), Address: addr})
	}
	for _, a := range trans {
		for _, b := range trans {
			if a != b {
				a.Connect(b.LocalAddr(), b)
			}
		}
	}
	for i := 0; i < 3; i++ {
		conf := inmemConfig(t)
		conf.LocalID = servers[i].ID
		if edit != nil {
			edit(conf)
		}
		store := &gatedStore{InmemStore: NewInmemStore()}
		fsm := &MockFSM{}
		snaps := NewInmemSnapshotStore()
		if err := BootstrapCluster(conf, store, store.InmemStore, snaps, trans[i], Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
		r, err := NewRaft(conf, fsm, store, store.InmemStore, snaps, trans[i])
		if err != nil {
			t.Fatal(err)
		}
		c.rafts, c.stores, c.fsms = append(c.rafts, r), append(c.stores, store), append(c.fsms, fsm)
	}
	t.Cleanup(func() {
		for _, r := range c.rafts {
			_ = r.Shutdown().Error()
		}
	})
	return c
}

// leader waits for a leader whose first entry of its term is applied.
func (c *gatedCluster) leader(t *testing.T) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for i, r := range c.rafts {
			if r.State() == Leader && r.Barrier(time.Second).Error() == nil {
				return i
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no leader")
	return -1
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func lastIndex(t *testing.T, s LogStore) uint64 {
	idx, err := s.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// The followers store a batch while the leader's own write is still in
// progress, and the entry is applied only after that write completes.
func TestParallelWrite_FollowersStoreWhileLeaderWrites(t *testing.T) {
	c := makeGatedCluster(t)
	l := c.leader(t)
	before := lastIndex(t, c.stores[l])

	entered, release := c.stores[l].hold(nil)
	defer release()
	f := c.rafts[l].Apply([]byte("x"), 5*time.Second)
	<-entered

	for i, s := range c.stores {
		if i == l {
			continue
		}
		waitFor(t, fmt.Sprintf("follower %d to store index %d", i, before+1), func() bool {
			return lastIndex(t, s) > before
		})
	}
	if got := lastIndex(t, c.stores[l]); got != before {
		t.Fatalf("leader store has index %d while its write is held (want %d)", got, before)
	}
	select {
	case <-f.(*logFuture).errCh:
		t.Fatal("apply answered before the leader's write completed")
	default:
	}

	release()
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	for i, fsm := range c.fsms {
		waitFor(t, fmt.Sprintf("fsm %d to apply", i), func() bool { return len(fsm.Logs()) == 1 })
	}
}

// With one follower cut off, the only quorum is the leader and the other
// follower: the entry must not be applied anywhere until the leader's
// write is durable, even though the follower has stored it.
func TestParallelWrite_LeaderCountsItselfOnlyWhenStored(t *testing.T) {
	c := makeGatedCluster(t)
	l := c.leader(t)
	cut, other := (l+1)%3, (l+2)%3
	for _, r := range c.rafts {
		r.trans.(*InmemTransport).Disconnect(c.rafts[cut].localAddr)
	}
	c.rafts[cut].trans.(*InmemTransport).DisconnectAll()
	before := lastIndex(t, c.stores[l])

	entered, release := c.stores[l].hold(nil)
	defer release()
	f := c.rafts[l].Apply([]byte("x"), 5*time.Second)
	<-entered
	waitFor(t, "the connected follower to store the entry", func() bool {
		return lastIndex(t, c.stores[other]) > before
	})
	// Heartbeats carry the commit index; give a few of them the chance
	// to (wrongly) announce the entry committed.
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		if c.rafts[other].getCommitIndex() > before || len(c.fsms[other].Logs()) > 0 {
			t.Fatal("entry committed before the leader's own write completed")
		}
		time.Sleep(5 * time.Millisecond)
	}

	release()
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the connected follower to apply", func() bool { return len(c.fsms[other].Logs()) == 1 })
}

// A leader whose write fails steps down and does not claim the batch in
// its last index (it would win votes with a log it does not have).
func TestParallelWrite_FailedWriteRollsBackLastLog(t *testing.T) {
	c := makeGatedCluster(t)
	l := c.leader(t)
	before := c.rafts[l].LastIndex()

	errDisk := errors.New("disk gone")
	_, release := c.stores[l].hold(errDisk)
	release()
	f := c.rafts[l].Apply([]byte("x"), 5*time.Second)
	if err := f.Error(); !errors.Is(err, errDisk) {
		t.Fatalf("apply: got %v, want %v", err, errDisk)
	}
	if got := c.rafts[l].LastIndex(); got != before {
		t.Fatalf("last index after a failed write: %d, want %d", got, before)
	}
}

// A replicator asking for an entry of a batch the leader failed to write
// (and rolled back) is told so, not ErrLogNotFound: replicateTo answers
// that with a snapshot, which would send an up-to-date follower back.
func TestParallelWrite_RolledBackEntryIsNotLogNotFound(t *testing.T) {
	c := makeGatedCluster(t)
	l := c.leader(t)
	r := c.rafts[l]
	var out Log
	if err := r.getLogToSend(r.getLastIndex()+1, &out); !errors.Is(err, errBatchRolledBack) {
		t.Fatalf("entry past the last index: %v, want errBatchRolledBack", err)
	}
	if err := c.stores[l].DeleteRange(1, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.getLogToSend(1, &out); !errors.Is(err, ErrLogNotFound) {
		t.Fatalf("compacted entry: %v, want ErrLogNotFound", err)
	}
}
