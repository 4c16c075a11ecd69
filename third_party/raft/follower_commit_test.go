package raft

import (
	"fmt"
	"testing"
	"time"
)

// A follower whose log ends in another leader's uncommitted run commits
// only what the leader's request showed to match. A leader that jumps
// back to before that run (the conflict hint) sends batches that end
// before the run: the follower must not take the leader's commit index
// as covering its own unmatched suffix and apply it.
func TestFollowerCommit_StopsAtTheLastMatchedEntry(t *testing.T) {
	data := func(term, idx uint64) []byte { return []byte(fmt.Sprintf("t%d/i%d", term, idx)) }
	store := NewInmemStore()
	var stale []*Log
	for i := uint64(1); i <= 9; i++ {
		term := uint64(1)
		if i >= 6 {
			term = 2 // a term-2 leader's entries nobody committed
		}
		stale = append(stale, &Log{Index: i, Term: term, Type: LogCommand, Data: data(term, i)})
	}
	if err := store.StoreLogs(stale); err != nil {
		t.Fatal(err)
	}
	if err := store.SetUint64(keyCurrentTerm, 2); err != nil {
		t.Fatal(err)
	}

	conf := inmemConfig(t)
	conf.LocalID = "follower"
	addr, trans := NewInmemTransport("")
	fsm := &MockFSM{}
	r, err := NewRaft(conf, fsm, store, store, NewInmemSnapshotStore(), trans)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Shutdown().Error() }()

	// The term-3 leader's log: 1..5 of term 1, then 6..10 of term 3,
	// all committed.
	leaderLog := func(i uint64) *Log {
		term := uint64(1)
		if i >= 6 {
			term = 3
		}
		return &Log{Index: i, Term: term, Type: LogCommand, Data: data(term, i)}
	}
	_, ldrTrans := NewInmemTransport("")
	ldrTrans.Connect(addr, trans)
	send := func(prev uint64, entries ...uint64) {
		t.Helper()
		req := &AppendEntriesRequest{
			RPCHeader:         RPCHeader{ProtocolVersion: ProtocolVersionMax, ID: []byte("leader"), Addr: []byte(ldrTrans.LocalAddr())},
			Term:              3,
			Leader:            []byte(ldrTrans.LocalAddr()),
			PrevLogEntry:      prev,
			PrevLogTerm:       leaderLog(prev).Term,
			LeaderCommitIndex: 10,
		}
		for _, i := range entries {
			req.Entries = append(req.Entries, leaderLog(i))
		}
		var resp AppendEntriesResponse
		if err := ldrTrans.AppendEntries("follower", addr, req, &resp); err != nil {
			t.Fatal(err)
		}
		if !resp.Success {
			t.Fatalf("append after %d refused: %+v", prev, resp)
		}
	}

	// Entries 3..4 match; 6..9 are still the stale run.
	send(2, 3, 4)
	if got := r.getCommitIndex(); got != 4 {
		t.Fatalf("commit index after a batch ending at 4 = %d, want 4 (6..9 were never shown to match the leader's)", got)
	}
	// The rest: 5 matches, 6 conflicts and cuts the stale run.
	send(4, 5, 6, 7, 8, 9, 10)

	deadline := time.Now().Add(10 * time.Second)
	for len(fsm.Logs()) < 10 {
		if time.Now().After(deadline) {
			t.Fatalf("applied %d entries, want 10", len(fsm.Logs()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i, d := range fsm.Logs() {
		if want := leaderLog(uint64(i + 1)).Data; string(d) != string(want) {
			t.Errorf("applied at index %d: %q, want the leader's %q", i+1, d, want)
		}
	}
}
