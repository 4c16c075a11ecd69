//go:build lattrace

package cluster

import (
	"time"

	"github.com/hashicorp/raft"
)

// traceStart is the proposal's start time for the lattrace stage table.
func traceStart() int64 { return time.Now().UnixNano() }

// traceProposed marks entry idx proposed at t0 and its proposer woken now.
func traceProposed(idx uint64, t0 int64) {
	raft.TraceMarkAt(raft.TracePropose, idx, t0)
	raft.TraceMark(raft.TraceWoken, idx)
}
