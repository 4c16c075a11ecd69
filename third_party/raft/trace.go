package raft

import "time"

// Commit-path tracing (locknode fork): with `-tags lattrace` every stage an
// entry passes on its way from proposal to the proposer's wake-up is
// timestamped (wall clock, so the files of several processes on one
// machine line up) and written to $LOCKNODE_LATTRACE.<pid>; bench's
// `lattrace` command turns the files of a cluster into a per-stage table.
// Without the tag TraceOn is false and every mark compiles away.

// TraceStage names a point on an entry's commit path, in path order.
type TraceStage uint8

const (
	TracePropose      TraceStage = 1  // leader: the proposer hands the command to raft (set by the caller)
	TraceDispatch     TraceStage = 2  // leader: the raft loop gives the entry its index
	TraceLeaderStored TraceStage = 3  // leader: its own log write is durable
	TraceAESend       TraceStage = 4  // leader: a replicator starts the AppendEntries call
	TraceAEFlushed    TraceStage = 5  // leader: the request is written to the socket
	TraceFDecoded     TraceStage = 6  // follower: the transport decoded the request
	TraceFLoop        TraceStage = 7  // follower: the raft loop starts on it
	TraceFStored      TraceStage = 8  // follower: the entries are durable
	TraceFRespond     TraceStage = 9  // follower: the raft loop answers
	TraceFConnGot     TraceStage = 10 // follower: the transport has the answer
	TraceFRespEncoded TraceStage = 11 // follower: the answer is encoded (flushed next)
	TraceLGotResp     TraceStage = 12 // leader: the replicator has the answer
	TraceLCommit      TraceStage = 13 // leader: the raft loop learns the entry is committed
	TraceFSMStart     TraceStage = 14 // any node: the FSM starts applying the entry
	TraceWoken        TraceStage = 15 // leader: the proposer is woken with the result (set by the caller)

	// A command a follower forwards to the leader (set by the caller,
	// except TraceFCommit).
	TraceFwdSend   TraceStage = 16 // follower: the forwarding call is sent
	TraceFwdRecv   TraceStage = 17 // leader: the forwarding call is received
	TraceFwdAnswer TraceStage = 18 // leader: the forwarding call's answer is ready
	TraceFwdGot    TraceStage = 19 // follower: it has the leader's answer
	TraceFCommit   TraceStage = 20 // follower: an AppendEntries tells it the entry is committed
	TraceFwdDone   TraceStage = 21 // follower: its caller is answered
)

// traceLogs marks every entry of logs with stage, all at one time.
func traceLogs(stage TraceStage, logs []*Log) {
	if len(logs) == 0 {
		return
	}
	t := time.Now().UnixNano()
	for _, l := range logs {
		TraceMarkAt(stage, l.Index, t)
	}
}
