package raft

// locknode: the names of the metrics raft reports per entry or per batch,
// made once instead of a slice literal (an allocation) at each report.
// Sharing them is safe because go-metrics only appends to a key, and each
// has its length as capacity, so an append copies it.
var (
	metricApply         = []string{"raft", "apply"}
	metricCommitTime    = []string{"raft", "commitTime"}
	metricFSMEnqueue    = []string{"raft", "fsm", "enqueue"}
	metricCommitNumLogs = []string{"raft", "commitNumLogs"}
	metricHeartbeat     = []string{"raft", "replication", "heartbeat"}
)
