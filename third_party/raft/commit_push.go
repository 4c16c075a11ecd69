// Copyright (c) HashiCorp, Inc.
// SPDX-License-Identifier: MPL-2.0

// This file is part of locknode's fork of hashicorp/raft v1.7.3 (see
// FORK.md): the leader pushes a new commit index only to the followers
// that want it now.

package raft

// Values of AppendEntriesResponse.LocknodeCommitPush.
const (
	// commitPushUnsaid: the follower does not say (an upstream follower):
	// it gets the push.
	commitPushUnsaid uint8 = iota
	// commitPushWanted: something on the follower waits for its applies.
	commitPushWanted
	// commitPushUnwanted: nothing on the follower waits for its applies;
	// the next AppendEntries (or CommitTimeout) brings the index.
	commitPushUnwanted
)

// LocknodeWantCommits sets how this node, while a follower, tells the
// leader whether it wants each new commit index pushed at once (FORK.md):
// fn is asked as each AppendEntries or heartbeat is answered, so it must
// be cheap and never block. nil, the default, wants every push. A follower
// that stops wanting the push still learns every commit from the next
// AppendEntries, or at the latest after CommitTimeout.
func (r *Raft) LocknodeWantCommits(fn func() bool) {
	if fn == nil {
		r.wantCommits.Store(nil)
		return
	}
	r.wantCommits.Store(&fn)
}

// commitPushAnswer is this follower's LocknodeCommitPush.
func (r *Raft) commitPushAnswer() uint8 {
	if p := r.wantCommits.Load(); p != nil && !(*p)() {
		return commitPushUnwanted
	}
	return commitPushWanted
}

// noteCommitPush records what the follower said in an answer. Called
// before the answer's acknowledgement reaches the commitment, so a commit
// it causes is pushed if the follower wants it. A follower that starts
// wanting the push is sent the commit index at once: the commit of an
// entry it is waiting for may have come, from the other followers'
// acknowledgements, just before this answer.
func (s *followerReplication) noteCommitPush(v uint8) {
	no := v == commitPushUnwanted
	if s.noCommitPush.Swap(no) && !no {
		asyncNotifyCh(s.triggerCh)
	}
}
