package cluster

import (
	"sync"
	"sync/atomic"
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
// the clock anchor (storeTimes), and whether the appends fail
// (storeHealth), for Ready.
type timedLogStore struct {
	raft.LogStore
	obs    prometheus.Observer
	clock  Clock
	stored *storeTimes
	health *storeHealth
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
	end := time.Now()
	t.obs.Observe(end.Sub(start).Seconds())
	if err != nil {
		t.health.failed(err, end)
		return err
	}
	t.health.ok()
	if len(logs) > 0 {
		t.stored.stored(logs[0].Index, logs[len(logs)-1].Index, at)
	}
	return err
}

// storeHealth is the outcome of a node's latest log appends: the last
// failure, when it happened, and whether an append succeeded after it.
// A node's store is only written when it has entries to store, so a
// failure is cleared by the next append that succeeds, not by time: a
// follower whose append failed keeps being sent those entries by the
// leader (raft retries a rejected AppendEntries, with back-off), and a
// leader whose append failed steps down and is sent them by the next.
type storeHealth struct {
	// failing is set while the last append failed: the successful path
	// reads only it.
	failing atomic.Bool

	mu     sync.Mutex
	err    error     // the last failure; nil if none yet
	failAt time.Time // when it happened (monotonic reading)
}

func (h *storeHealth) failed(err error, at time.Time) {
	h.mu.Lock()
	h.err, h.failAt = err, at
	h.failing.Store(true)
	h.mu.Unlock()
}

func (h *storeHealth) ok() {
	if !h.failing.Load() {
		return
	}
	h.mu.Lock()
	h.failing.Store(false)
	h.mu.Unlock()
}

// last returns when the last failure happened, whether no append
// succeeded since, and the failure (nil if none).
func (h *storeHealth) last() (at time.Time, failing bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failAt, h.failing.Load(), h.err
}
