package testcluster

import (
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/locknode/locknode/cluster"
)

// diskState is one node's disk as the disk nemesis sees it: the faults
// its raft log's file operations meet (cluster.Config.StorageFaults,
// beneath every wrapper of the log store). It outlives restarts; the
// node's snapshots and raft.db are not faulted.
type diskState struct {
	mu     sync.Mutex
	err    error                      // the error faulted operations fail with; nil: healthy
	ops    map[cluster.StorageOp]bool // which operations fail
	tear   bool                       // the next write is torn, and every operation after it fails
	torn   bool                       // a write was torn: the disk is dead until healed
	faults *atomic.Int64              // the cluster's count of injected errors
}

// hook is the node's cluster.StorageFaults.
func (d *diskState) hook(op cluster.StorageOp, size int) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.torn:
		d.faults.Add(1)
		return 0, syscall.EIO
	case d.tear && op == cluster.StorageWrite:
		// Half the batch reaches the disk, as when the machine dies
		// mid-write; the process is crashed before anything else is
		// written (the nemesis crashes it, and until then every
		// operation fails).
		d.torn = true
		d.faults.Add(1)
		return size / 2, syscall.EIO
	case d.err != nil && d.ops[op]:
		d.faults.Add(1)
		return 0, d.err
	}
	return 0, nil
}

func (d *diskState) set(err error, tear bool, ops ...cluster.StorageOp) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.err, d.tear, d.torn = err, tear, false
	d.ops = map[cluster.StorageOp]bool{}
	for _, op := range ops {
		d.ops[op] = true
	}
}

// FailDisk makes node i's raft log operations ops fail with err
// (syscall.ENOSPC for a full disk, syscall.EIO for a failing one) until
// HealDisk. No ops: every operation.
func (c *Cluster) FailDisk(i int, err error, ops ...cluster.StorageOp) {
	if len(ops) == 0 {
		ops = []cluster.StorageOp{cluster.StorageWrite, cluster.StorageSync, cluster.StorageCreate}
	}
	c.log.Info("disk fault", "node", nodeID(i), "error", err, "ops", ops)
	c.disks[i].set(err, false, ops...)
}

// TearDisk makes node i's next raft log write torn: half of it is
// written, it fails with EIO, and so does every operation after it, as
// if the machine had died mid-write. Crash the node next; HealDisk
// before it restarts.
func (c *Cluster) TearDisk(i int) {
	c.log.Info("disk tear", "node", nodeID(i))
	c.disks[i].set(nil, true)
}

// HealDisk ends node i's disk faults.
func (c *Cluster) HealDisk(i int) {
	c.disks[i].set(nil, false)
}

// DiskFaults is how many raft log operations the disk faults failed so
// far, on every node.
func (c *Cluster) DiskFaults() int64 { return c.diskFaults.Load() }
