// Copyright (c) HashiCorp, Inc.
// SPDX-License-Identifier: MPL-2.0

// This file is part of locknode's fork of hashicorp/raft v1.7.3 (see
// FORK.md): a follower that learns of a committed entry from the answer
// to a request it forwarded commits up to it without waiting for the
// leader's next AppendEntries.

package raft

import "sync"

// commitHint is the latest committed entry a follower was told of.
type commitHint struct {
	ch          chan struct{} // notified on every new hint
	mu          sync.Mutex
	index, term uint64
}

// LocknodeCommitted tells a follower that the entry at index, written in
// term, is committed: the leader said so. The follower commits up to it
// (and applies) if its own log has that entry — same index, same term,
// so by the Log Matching property the whole prefix is the leader's — and
// otherwise ignores it: the AppendEntries that brings the entry carries
// the commit index anyway. term must be the entry's own term, read from
// the leader's log after the commit, never the leader's term at some
// other moment: a follower may hold an uncommitted entry of an earlier
// term at that index. Anywhere but on a follower it does nothing.
func (r *Raft) LocknodeCommitted(index, term uint64) {
	if index == 0 || term == 0 {
		return
	}
	h := &r.commitHint
	h.mu.Lock()
	if index > h.index {
		h.index, h.term = index, term
	}
	h.mu.Unlock()
	asyncNotifyCh(h.ch)
}

// applyCommitHint commits and applies up to the latest hint if this
// follower's log has its entry. Main thread only (runFollower).
func (r *Raft) applyCommitHint() {
	h := &r.commitHint
	h.mu.Lock()
	idx, term := h.index, h.term
	h.mu.Unlock()
	if idx <= r.getCommitIndex() || idx > r.getLastIndex() {
		return
	}
	var l Log
	if err := r.logs.GetLog(idx, &l); err != nil || l.Term != term {
		return
	}
	if TraceOn {
		for i := r.getCommitIndex() + 1; i <= idx; i++ {
			TraceMark(TraceFCommit, i)
		}
	}
	r.setCommitIndex(idx)
	if r.configurations.latestIndex <= idx {
		r.setCommittedConfiguration(r.configurations.latest, r.configurations.latestIndex)
	}
	r.processLogs(idx, nil)
}
