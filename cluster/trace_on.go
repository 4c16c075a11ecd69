//go:build lattrace

package cluster

import (
	"time"

	"github.com/hashicorp/raft"
)

// traceStart is the proposal's start time for the lattrace stage table.
// traceOn says whether commit-path tracing is compiled in.
const traceOn = true

func traceStart() int64 { return time.Now().UnixNano() }

// traceProposed marks entry idx proposed at t0 and its proposer woken now.
func traceProposed(idx uint64, t0 int64) {
	raft.TraceMarkAt(raft.TracePropose, idx, t0)
	raft.TraceMark(raft.TraceWoken, idx)
}

// traceFwdServed marks, on the leader, forwarded entry idx received at
// recv, proposed at t0 and its proposer woken now.
func traceFwdServed(idx uint64, recv, t0 int64) {
	raft.TraceMarkAt(raft.TraceFwdRecv, idx, recv)
	traceProposed(idx, t0)
}

// traceFwdAnswered marks, on the leader, the forwarding call's answer
// for entry idx ready now.
func traceFwdAnswered(idx uint64) { raft.TraceMark(raft.TraceFwdAnswer, idx) }

// traceFwdGot marks, on a follower, entry idx forwarded at sent and the
// leader's answer for it here now.
func traceFwdGot(idx uint64, sent int64) {
	raft.TraceMarkAt(raft.TraceFwdSend, idx, sent)
	raft.TraceMark(raft.TraceFwdGot, idx)
}

// traceFwdDone marks, on a follower, the caller of entry idx answered now.
func traceFwdDone(idx uint64) { raft.TraceMark(raft.TraceFwdDone, idx) }
