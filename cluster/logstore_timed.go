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
//
// It also records when each entry was stored, on the node's clock, for
// the clock anchor (storeTimes).
type timedLogStore struct {
	raft.LogStore
	obs    prometheus.Observer
	clock  Clock
	stored *storeTimes
}

func (t timedLogStore) StoreLog(l *raft.Log) error {
	return t.StoreLogs([]*raft.Log{l})
}

func (t timedLogStore) StoreLogs(logs []*raft.Log) error {
	var at time.Time
	if len(logs) > 0 {
		at = t.clock.Now()
	}
	start := time.Now()
	err := t.LogStore.StoreLogs(logs)
	t.obs.Observe(time.Since(start).Seconds())
	if err == nil && len(logs) > 0 {
		t.stored.stored(logs[0].Index, logs[len(logs)-1].Index, at)
	}
	return err
}
