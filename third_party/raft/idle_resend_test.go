package raft

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// locknode fork: what noteHeard records decides caughtUp: the follower
// must hold the whole log and know all of it committed, and any failure
// forgets it.
func TestIdleResend_CaughtUp(t *testing.T) {
	var s followerReplication
	if s.caughtUp(0, 0) {
		t.Fatal("caught up before any answer")
	}
	// Entries 5..7 acknowledged with commit index 4: the follower holds 7
	// but knows only 4 committed.
	req := &AppendEntriesRequest{PrevLogEntry: 4, LeaderCommitIndex: 4,
		Entries: []*Log{{Index: 5}, {Index: 6}, {Index: 7}}}
	s.noteHeard(req)
	if s.caughtUp(7, 7) {
		t.Fatal("caught up although it knows only index 4 committed")
	}
	// An empty request at 7 carrying commit index 7.
	s.noteHeard(&AppendEntriesRequest{PrevLogEntry: 7, LeaderCommitIndex: 7})
	if !s.caughtUp(7, 7) {
		t.Fatal("not caught up after acknowledging the whole log committed")
	}
	if s.caughtUp(8, 7) {
		t.Fatal("caught up although the log grew")
	}
	if s.caughtUp(7, 6) {
		t.Fatal("caught up although the commit index is below the last index")
	}
	// A commit index past what the request showed to match counts only up
	// to the match.
	s.noteHeard(&AppendEntriesRequest{PrevLogEntry: 6, LeaderCommitIndex: 7})
	if s.caughtUp(7, 7) {
		t.Fatal("caught up past the entries the request matched")
	}
	s.noteHeard(&AppendEntriesRequest{PrevLogEntry: 7, LeaderCommitIndex: 7})
	s.forgetHeard()
	if s.caughtUp(7, 7) {
		t.Fatal("still caught up after forgetHeard")
	}
}

// countingTransport counts the AppendEntries it sends that are not
// heartbeats (a heartbeat carries neither a previous entry nor a commit
// index), and sends without a pipeline so that every one passes here.
type countingTransport struct {
	*InmemTransport
	resends atomic.Int64
}

func (c *countingTransport) AppendEntries(id ServerID, target ServerAddress, args *AppendEntriesRequest, resp *AppendEntriesResponse) error {
	if len(args.Entries) == 0 && (args.PrevLogEntry != 0 || args.LeaderCommitIndex != 0) {
		c.resends.Add(1)
	}
	return c.InmemTransport.AppendEntries(id, target, args, resp)
}

func (c *countingTransport) AppendEntriesPipeline(ServerID, ServerAddress) (AppendPipeline, error) {
	return nil, ErrPipelineReplicationNotSupported
}

// locknode fork: once every follower holds the log and knows it
// committed, the leader resends empty AppendEntries about
// idleResendFactor times less often than every CommitTimeout (upstream:
// two followers × the window / 1–2 CommitTimeouts, 40–80 here).
func TestIdleResend_RareWhileFollowersCaughtUp(t *testing.T) {
	const commitTimeout = 5 * time.Millisecond
	var trans []*countingTransport
	var servers []Server
	for i := 0; i < 3; i++ {
		addr, tr := NewInmemTransport("")
		trans = append(trans, &countingTransport{InmemTransport: tr})
		servers = append(servers, Server{Suffrage: Voter, ID: ServerID(fmt.Sprintf("s%d", i)), Address: addr})
	}
	for _, a := range trans {
		for _, b := range trans {
			if a != b {
				a.Connect(b.LocalAddr(), b.InmemTransport)
			}
		}
	}
	var rafts []*Raft
	var fsms []*MockFSM
	for i := 0; i < 3; i++ {
		conf := inmemConfig(t)
		conf.LocalID = servers[i].ID
		conf.CommitTimeout = commitTimeout
		// Heartbeats slow enough that a loaded machine does not fail them.
		conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = time.Second, time.Second, time.Second
		store, snaps, fsm := NewInmemStore(), NewInmemSnapshotStore(), &MockFSM{}
		if err := BootstrapCluster(conf, store, store, snaps, trans[i], Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
		r, err := NewRaft(conf, fsm, store, store, snaps, trans[i])
		if err != nil {
			t.Fatal(err)
		}
		rafts, fsms = append(rafts, r), append(fsms, fsm)
	}
	t.Cleanup(func() {
		for _, r := range rafts {
			_ = r.Shutdown().Error()
		}
	})
	var l int
	waitFor(t, "a leader", func() bool {
		for i, r := range rafts {
			if r.State() == Leader {
				l = i
				return true
			}
		}
		return false
	})
	f := rafts[l].Apply([]byte("e"), 5*time.Second)
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	for i, fsm := range fsms {
		waitFor(t, fmt.Sprintf("fsm %d to apply the entry", i), func() bool {
			fsm.Lock()
			defer fsm.Unlock()
			return len(fsm.logs) >= 1
		})
	}
	var repls []*followerReplication
	waitFor(t, "both followers caught up", func() bool {
		rafts[l].leaderLock.Lock()
		defer rafts[l].leaderLock.Unlock()
		repls = repls[:0]
		last, _ := rafts[l].getLastLog()
		for _, s := range rafts[l].leaderState.replState {
			if !s.caughtUp(last, rafts[l].getCommitIndex()) {
				return false
			}
			repls = append(repls, s)
		}
		return len(repls) == 2
	})

	const window = 400 * time.Millisecond
	before := trans[l].resends.Load()
	start := time.Now()
	time.Sleep(window) // the measured interval itself, not a synchronisation
	got := trans[l].resends.Load() - before
	el := time.Since(start)
	// Each follower's resend comes at most every idleResendFactor
	// CommitTimeouts, plus the one already armed when it caught up.
	limit := int64(2 * (el/(idleResendFactor*commitTimeout) + 2))
	if got > limit {
		t.Fatalf("%d resends in %v to caught-up followers, want <= %d", got, el, limit)
	}
	t.Logf("%d resends in %v (limit %d)", got, el, limit)
}

// locknode fork: a follower that did not want the commit push still
// learns a commit from the resend after one CommitTimeout or two (the
// normal period: it is not caught up), not idleResendFactor of them.
func TestIdleResend_StillResendsWhatTheFollowerMissed(t *testing.T) {
	const commitTimeout = 50 * time.Millisecond
	c := makeGatedClusterConf(t, func(conf *Config) { conf.CommitTimeout = commitTimeout })
	l := c.leader(t)
	quiet := (l + 1) % 3
	c.rafts[quiet].LocknodeWantCommits(func() bool { return false })
	waitFor(t, "the leader to hear that the follower wants no push", func() bool {
		c.rafts[l].leaderLock.Lock()
		defer c.rafts[l].leaderLock.Unlock()
		s := c.rafts[l].leaderState.replState[c.rafts[quiet].localID]
		return s != nil && s.noCommitPush.Load()
	})
	for k := 0; k < 3; k++ {
		f := c.rafts[l].Apply([]byte(fmt.Sprintf("e%d", k)), 5*time.Second)
		if err := f.Error(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		waitFor(t, "the quiet follower to apply the entry", func() bool {
			return c.rafts[quiet].AppliedIndex() >= f.Index()
		})
		// idleResendFactor CommitTimeouts is 800 ms; two periods and
		// some scheduling slack stay well below it.
		if el := time.Since(start); el >= idleResendFactor*commitTimeout/2 {
			t.Fatalf("entry %d: the follower applied it %v after its commit: the resend waited as if it were caught up", k, el)
		}
	}
}

// locknode fork: after failed heartbeats the leader forgets what the
// follower knew, and the first heartbeat that succeeds again triggers the
// replicator, so a follower that missed a commit (or restarted) learns it
// at once, not at the next resend (an hour here).
func TestIdleResend_ResumedHeartbeatTriggersReplication(t *testing.T) {
	c := makeGatedClusterConf(t, func(conf *Config) {
		conf.CommitTimeout = time.Hour
		conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = 500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
	})
	l := c.leader(t)
	quiet := (l + 1) % 3
	c.rafts[quiet].LocknodeWantCommits(func() bool { return false })
	failed := make(chan struct{}, 1)
	var once sync.Once
	obs := NewObserver(make(chan Observation, 16), false, func(o *Observation) bool {
		if h, ok := o.Data.(FailedHeartbeatObservation); ok && h.PeerID == c.rafts[quiet].localID {
			once.Do(func() { close(failed) })
		}
		return false
	})
	c.rafts[l].RegisterObserver(obs)
	defer c.rafts[l].DeregisterObserver(obs)

	lt := c.rafts[l].trans.(*InmemTransport)
	qt := c.rafts[quiet].trans.(*InmemTransport)
	lt.Disconnect(qt.LocalAddr())
	qt.DisconnectAll()
	f := c.rafts[l].Apply([]byte("missed"), 5*time.Second)
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-failed:
	case <-time.After(10 * time.Second):
		t.Fatal("no failed heartbeat to the disconnected follower")
	}
	lt.Connect(qt.LocalAddr(), qt)
	for _, i := range []int{l, (l + 2) % 3} {
		qt.Connect(c.rafts[i].trans.(*InmemTransport).LocalAddr(), c.rafts[i].trans.(*InmemTransport))
	}
	waitFor(t, "the reconnected follower to apply the entry", func() bool {
		return c.rafts[quiet].AppliedIndex() >= f.Index()
	})
}
