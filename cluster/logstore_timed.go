package cluster

import (
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// timedLogStore times raft's appends to the log store: the write and
// fsync every acknowledged entry waits for on each node
// (locknode_log_store_seconds). It hides nothing raft looks for: the
// stores beneath are not raft.MonotonicLogStore either (walLog says why).
type timedLogStore struct {
	raft.LogStore
	obs prometheus.Observer
}

func (t timedLogStore) StoreLog(l *raft.Log) error {
	return t.StoreLogs([]*raft.Log{l})
}

func (t timedLogStore) StoreLogs(logs []*raft.Log) error {
	start := time.Now()
	err := t.LogStore.StoreLogs(logs)
	t.obs.Observe(time.Since(start).Seconds())
	return err
}
