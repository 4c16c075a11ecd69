package raft

// locknode: the names of the metrics raft reports per entry or per batch,
// made once instead of a slice literal (an allocation) at each report.
var (
	metricApply         = []string{"raft", "apply"}
	metricCommitTime    = []string{"raft", "commitTime"}
	metricFSMEnqueue    = []string{"raft", "fsm", "enqueue"}
	metricCommitNumLogs = []string{"raft", "commitNumLogs"}
)
