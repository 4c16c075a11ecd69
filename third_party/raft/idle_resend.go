// Copyright (c) HashiCorp, Inc.
// SPDX-License-Identifier: MPL-2.0

// This file is part of locknode's fork of hashicorp/raft v1.7.3 (see
// FORK.md): a replicator whose follower already knows everything resends
// its AppendEntries rarely.

package raft

import "time"

// idleResendFactor: how many CommitTimeouts a replicator waits before its
// resend while the follower is known to hold, and to know committed, the
// whole log. The resend then only guards against a follower that lost
// what it knew without any failed RPC telling the leader (an in-process
// restart on a transport that does not break), so it can be rare.
const idleResendFactor = 16

// noteHeard records a successful AppendEntries answer: the follower
// holds the leader's log up to the request's last entry, and knows the
// request's commit index. What it knows committed is the smaller of the
// two (it commits only what the request showed to match).
func (s *followerReplication) noteHeard(req *AppendEntriesRequest) {
	matched := req.PrevLogEntry
	if n := len(req.Entries); n > 0 {
		matched = req.Entries[n-1].Index
	}
	s.heard.Store(min(matched, req.LeaderCommitIndex) + 1)
}

// forgetHeard clears what noteHeard recorded, after a failed or refused
// RPC (heartbeats included): the follower may have restarted, and lost its
// commit index with it, so the resend runs every CommitTimeout again until
// an answer shows it caught up.
func (s *followerReplication) forgetHeard() { s.heard.Store(0) }

// caughtUp: the follower holds the log up to lastIndex and knows all of it
// committed, so an AppendEntries without new entries would tell it
// nothing. Until the log grows (which triggers the replicator) nothing
// changes that: the commit index never passes the last index.
func (s *followerReplication) caughtUp(lastIndex, commitIndex uint64) bool {
	h := s.heard.Load()
	return h != 0 && h-1 == lastIndex && commitIndex == lastIndex
}

// commitResendPeriod is the minimum of the replicator's random wait for
// its resend: CommitTimeout, or idleResendFactor times it while the
// follower is caught up. Upstream resends every CommitTimeout whatever the
// follower knows, so an idle cluster exchanged an AppendEntries and its
// answer per follower every CommitTimeout or two. A new entry triggers the
// replicator at once either way, and a follower that stops being caught up
// without a new entry (a commit it missed) is handled by the normal period:
// the check is made each time the timer is armed, after every send.
func (r *Raft) commitResendPeriod(s *followerReplication) time.Duration {
	ct := r.config().CommitTimeout
	lastIndex, _ := r.getLastLog()
	if s.caughtUp(lastIndex, r.getCommitIndex()) {
		return idleResendFactor * ct
	}
	return ct
}
