package main

import (
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// devQuiet hides, in `locknode dev`, the raft messages an in-process
// cluster prints because it forms and stops as a whole: every node
// starts without a leader (each times out waiting for one and campaigns)
// and, on Ctrl-C, every node goes away at once (replication to the
// closed ones fails). Read as warnings and errors they look like faults,
// and in dev they never are. The same messages while the cluster runs
// still show: a node that falls silent then is worth the noise. With
// --log-level debug or trace nothing is hidden.
type devQuiet struct {
	phase  atomic.Int32 // devForming, devRunning or devStopping
	hidden atomic.Int64
}

const (
	devForming int32 = iota
	devRunning
	devStopping
)

// devFormingNoise are the warnings of an election at start (all from
// hashicorp/raft).
var devFormingNoise = []string{
	"heartbeat timeout reached, starting election",
	"Election timeout reached, restarting election",
	"rejecting vote request since",
	"rejecting pre-vote request since",
	"failed to make requestVote RPC",
}

// devStoppingNoise are the messages of peers going away together: raft's
// replication and its network transport, and the cluster's leadership
// hand-over, which has no one to hand over to.
var devStoppingNoise = append([]string{
	"failed to appendEntries to",
	"failed to heartbeat to",
	"failed to decode incoming command",
	"failed to contact",
	"peer has newer term, stopping replication",
	"leader barrier failed",
	"leadership transfer on close failed",
}, devFormingNoise...)

// exclude is an hclog.LoggerOptions.Exclude.
func (q *devQuiet) exclude(_ hclog.Level, msg string, _ ...any) bool {
	var noise []string
	switch q.phase.Load() {
	case devForming:
		noise = devFormingNoise
	case devStopping:
		noise = devStoppingNoise
	}
	for _, n := range noise {
		if strings.HasPrefix(msg, n) {
			q.hidden.Add(1)
			return true
		}
	}
	return false
}
