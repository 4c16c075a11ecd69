// Copyright (c) HashiCorp, Inc.
// SPDX-License-Identifier: MPL-2.0

// Tests of locknode's fork change (commit_hint.go, FORK.md).

package raft

import (
	"testing"
	"time"
)

// A follower cut off from the leader commits an entry it has when told
// of it with the entry's own term, and ignores a hint whose term differs
// or whose entry it does not have.
func TestCommitHint(t *testing.T) {
	c := makeGatedCluster(t)
	l := c.leader(t)
	fi := (l + 1) % 3
	f := c.rafts[fi]
	// No election while it is cut off: the test needs it a follower.
	if err := f.ReloadConfig(ReloadableConfig{HeartbeatTimeout: time.Hour, ElectionTimeout: time.Hour,
		TrailingLogs: f.config().TrailingLogs, SnapshotInterval: f.config().SnapshotInterval,
		SnapshotThreshold: f.config().SnapshotThreshold}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower to learn every commit", func() bool {
		return f.getCommitIndex() == c.rafts[l].getCommitIndex() && f.getLastApplied() == f.getCommitIndex()
	})
	for _, r := range c.rafts {
		r.trans.(*InmemTransport).Disconnect(f.localAddr)
	}
	f.trans.(*InmemTransport).DisconnectAll()

	// An entry the leader never sent it, as an uncommitted one of an
	// earlier term would be.
	idx, term := f.getLastIndex()+1, f.getCurrentTerm()
	if err := c.stores[fi].StoreLogs([]*Log{{Index: idx, Term: term, Type: LogCommand, Data: []byte("hinted")}}); err != nil {
		t.Fatal(err)
	}
	f.setLastLog(idx, term)
	applied := len(c.fsms[fi].Logs())
	commit := f.getCommitIndex()

	// processed waits until the follower's loop has handled the hint.
	processed := func() {
		t.Helper()
		waitFor(t, "the hint to be taken", func() bool { return len(f.commitHint.ch) == 0 })
		if err := f.GetConfiguration().Error(); err != nil { // one more loop turn
			t.Fatal(err)
		}
	}
	for _, h := range []struct {
		name        string
		index, term uint64
	}{
		{"another term", idx, term + 1},
		{"an entry it does not have", idx + 1, term},
	} {
		f.LocknodeCommitted(h.index, h.term)
		processed()
		if got := f.getCommitIndex(); got != commit || len(c.fsms[fi].Logs()) != applied {
			t.Fatalf("hint of %s: commit index %d (was %d), applied %d (was %d)", h.name, got, commit, len(c.fsms[fi].Logs()), applied)
		}
		f.commitHint.mu.Lock()
		f.commitHint.index = 0
		f.commitHint.mu.Unlock()
	}

	f.LocknodeCommitted(idx, term)
	waitFor(t, "the hinted entry to be applied", func() bool {
		logs := c.fsms[fi].Logs()
		return len(logs) == applied+1 && string(logs[applied]) == "hinted"
	})
	if got := f.getCommitIndex(); got != idx {
		t.Fatalf("commit index %d, want %d", got, idx)
	}
}
