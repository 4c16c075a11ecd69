// Copyright (c) HashiCorp, Inc.
// SPDX-License-Identifier: MPL-2.0

// This file is part of locknode's fork of hashicorp/raft v1.7.3 (see
// FORK.md): the leader replicates a batch while writing it to its own
// log store, instead of after.

package raft

import (
	"errors"
	"sync"
)

// unstoredLogs is the leader's batch that dispatchLogs is writing to the
// log store: replicators read it from here until the store has it.
type unstoredLogs struct {
	mu   sync.RWMutex
	logs []*Log // consecutive indexes; nil when no write is in progress
}

func (u *unstoredLogs) set(logs []*Log) {
	u.mu.Lock()
	u.logs = logs
	u.mu.Unlock()
}

func (u *unstoredLogs) clear() {
	u.mu.Lock()
	u.logs = nil
	u.mu.Unlock()
}

// get copies the entry at index into out if it is in the batch.
func (u *unstoredLogs) get(index uint64, out *Log) bool {
	u.mu.RLock()
	defer u.mu.RUnlock()
	if len(u.logs) == 0 {
		return false
	}
	first := u.logs[0].Index
	if index < first || index-first >= uint64(len(u.logs)) {
		return false
	}
	*out = *u.logs[index-first]
	return true
}

// errBatchRolledBack: the entry a replicator asked for belonged to a
// batch whose local write failed (dispatchLogs rolled lastLog back).
var errBatchRolledBack = errors.New("raft: entry's batch was not stored by the leader")

// getLogToSend reads an entry for an AppendEntries request: from the
// batch being written, else from the log store. The batch is cleared
// only after the store has it, so every index up to getLastIndex is in
// one of the two — unless the write failed and the batch was rolled
// back. That must not read as ErrLogNotFound, which replicateTo answers
// with a snapshot: an up-to-date follower would be sent back to it.
func (r *Raft) getLogToSend(index uint64, out *Log) error {
	if r.unstored.get(index, out) {
		return nil
	}
	err := r.logs.GetLog(index, out)
	if errors.Is(err, ErrLogNotFound) && index > r.getLastIndex() {
		return errBatchRolledBack
	}
	return err
}
