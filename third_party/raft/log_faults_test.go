package raft

import (
	"errors"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// A follower whose log holds a run of another term's entries answers a
// mismatch with the index before that run, so the leader skips it in
// one round trip.
func TestConflictHint_SkipsTheWholeTerm(t *testing.T) {
	store := NewInmemStore()
	var logs []*Log
	for i := uint64(10); i <= 1000; i++ {
		term := uint64(2)
		switch {
		case i >= 500:
			term = 4 // an old leader's entries nobody committed
		case i >= 100:
			term = 3
		}
		logs = append(logs, &Log{Index: i, Term: term})
	}
	if err := store.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	r := &Raft{logs: store, logger: hclog.NewNullLogger()}
	for _, c := range []struct{ prev, term, want uint64 }{
		{1000, 4, 499}, {500, 4, 499}, {499, 3, 99}, {150, 3, 99}, {50, 2, 9}, {10, 2, 9},
	} {
		if got := r.conflictHint(c.prev, c.term); got != c.want {
			t.Errorf("conflictHint(%d, term %d) = %d, want %d", c.prev, c.term, got, c.want)
		}
	}
	// Never below what is known to match: the commit index, the last
	// snapshot (the log's start may be gone with it).
	r.setCommitIndex(520)
	if got := r.conflictHint(1000, 4); got != 520 {
		t.Errorf("with commit index 520: conflictHint(1000, term 4) = %d, want 520", got)
	}
	r.setCommitIndex(0)
	r.setLastSnapshot(300, 3)
	if got := r.conflictHint(499, 3); got != 300 {
		t.Errorf("with a snapshot at 300: conflictHint(499, term 3) = %d, want 300", got)
	}
	if got := r.conflictHint(1000, 4); got != 499 {
		t.Errorf("with a snapshot at 300: conflictHint(1000, term 4) = %d, want 499", got)
	}
}

// failingStore fails StoreLogs and DeleteRange while fail is set.
type failingStore struct {
	*InmemStore
	fail bool
}

func (f *failingStore) StoreLogs(logs []*Log) error {
	if f.fail {
		return errors.New("no space left on device")
	}
	return f.InmemStore.StoreLogs(logs)
}

func (f *failingStore) StoreLog(l *Log) error { return f.StoreLogs([]*Log{l}) }

// After a suffix was cleared and the append failed, the follower claims
// only what its store holds.
func TestResyncLastLog_AfterAFailedWrite(t *testing.T) {
	store := &failingStore{InmemStore: NewInmemStore()}
	for i := uint64(1); i <= 20; i++ {
		if err := store.StoreLog(&Log{Index: i, Term: 1}); err != nil {
			t.Fatal(err)
		}
	}
	r := &Raft{logs: store, logger: hclog.NewNullLogger()}
	r.setLastLog(20, 1)
	if err := store.DeleteRange(15, 20); err != nil {
		t.Fatal(err)
	}
	store.fail = true
	r.resyncLastLog()
	if idx, term := r.getLastLog(); idx != 14 || term != 1 {
		t.Fatalf("lastLog after resync = (%d, %d), want (14, 1)", idx, term)
	}
}
