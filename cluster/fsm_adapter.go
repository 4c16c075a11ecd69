package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/cluster/lockservice"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/fsm/reply"
)

// fsmAdapter is the node seen as a raft.BatchingFSM. Raft calls it from
// one goroutine, in log order.
type fsmAdapter Node

var _ raft.BatchingFSM = (*fsmAdapter)(nil)

type appliedEvents struct {
	index  uint64
	events []fsm.Event
}

// ApplyBatch applies committed entries to the table under the node's
// lock, then (outside it) completes local waiters and calls subscribers,
// and finally publishes the new applied index. Waiters see their events
// before anyone waiting for the index proceeds, so a request that waits
// for index i and then looks at its waiter channel never misses an event
// at or below i.
func (f *fsmAdapter) ApplyBatch(logs []*raft.Log) []interface{} {
	n := (*Node)(f)
	out := make([]interface{}, len(logs))
	// One allocation for the batch's results; boxing a pointer into out
	// allocates nothing (a Result boxed by value was one allocation per
	// entry). proposalResult takes *fsm.Result.
	results := make([]fsm.Result, len(logs))
	var evs []appliedEvents // allocated at the first entry with events
	var counts applyCounts
	var forcedAt uint64 // the last entry whose forced releases are recorded
	// One Command decoded into entry after entry: the table keeps none of
	// it past Apply (what it keeps, it copies or takes from l.Data).
	var cmd fsm.Command

	n.mu.Lock()
	held := time.Now()
	quiet := f.chooseOutputs()
	var quietAt uint64 // the last renewal batch applied without them
	n.history.begin()
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		counts.commands++
		var r fsm.Result
		if err := fsm.DecodeCommandInto(&cmd, l.Data); err != nil {
			// ApplyBytes refuses it the same way on every node.
			r = n.table.ApplyBytes(l.Index, l.Data)
		} else {
			r = n.table.Apply(l.Index, &cmd)
			if quiet && cmd.Op == fsm.OpBatchRenew {
				quietAt = l.Index
			}
			switch {
			case cmd.Op == fsm.OpAcquire && r.Granted && r.Err == nil:
				counts.grants++
			case cmd.Op == fsm.OpRedis && isSetNX(cmd.Args) && r.Reply.Kind == reply.Status:
				counts.grants++
			case cmd.Op == fsm.OpFenceCheck && errors.Is(r.Err, fsm.ErrStaleFence):
				counts.fenceRejects++
			}
			n.history.observe(n.table, &cmd, &r)
		}
		f.tally(&counts, &forcedAt, l.Index, &r)
		if len(r.Events) > 0 {
			if evs == nil {
				// Most lock commands emit events: room for the rest of
				// the batch at once instead of growing by doubling.
				evs = make([]appliedEvents, 0, len(logs)-i)
			}
			evs = append(evs, appliedEvents{l.Index, r.Events})
		}
		results[i] = r
		out[i] = &results[i]
	}
	now := n.table.Now()
	halted := n.table.Halted()
	n.renew.noteVersion(n.table.Version())
	lastApplied := uint64(0)
	if len(logs) > 0 {
		lastApplied = logs[len(logs)-1].Index
	}
	if halted != nil {
		// The entries from the one it could not apply on were not applied.
		lastApplied = min(lastApplied, n.table.AppliedIndex())
	}
	n.mu.Unlock()
	n.history.flush()
	if halted != nil {
		n.halt(halted)
	}

	n.metrics.applyPause(time.Since(held))
	n.metrics.applied(counts)
	for _, ae := range evs {
		n.hub.Dispatch(ae.index, ae.events)
	}
	if quietAt != 0 {
		n.hub.ChangesSkipped(quietAt)
	}
	n.spanTimes.record(logs, held)
	if lastApplied > 0 {
		n.setApplied(lastApplied, now, false)
	}
	select {
	case n.kick <- struct{}{}:
	default:
	}
	return out
}

// chooseOutputs sets, under n.mu before a batch, which of the table's
// outputs this node has a reader for, and reports whether renewals
// leave out their change events (quiet).
func (f *fsmAdapter) chooseOutputs() (quiet bool) {
	n := (*Node)(f)
	n.table.SetKeyspaceEvents(n.keyspace.On())
	// Each renewal's result in a batch entry is read only by the node
	// that proposed the entry, while it awaits the answer; elsewhere (a
	// follower, always) they are garbage built per renewal.
	n.table.SkipBatchResults(n.renew.awaited.Load() == 0)
	// A batch's renewals report their leases' changes only while
	// something on this node reads them (change_demand.go).
	quiet = !n.wantsChanges()
	n.table.SkipRenewalChanges(quiet)
	return quiet
}

// tally counts entry idx's events into counts and the hold-time metric,
// and records its forced releases once (forcedAt: the last entry whose
// forced releases are recorded).
func (f *fsmAdapter) tally(counts *applyCounts, forcedAt *uint64, idx uint64, r *fsm.Result) {
	n := (*Node)(f)
	for _, e := range r.Events {
		if e.Kind == fsm.EvReleased && e.Granted > 0 && r.Now >= e.Granted {
			n.metrics.lockHold.Observe(float64(r.Now-e.Granted) / 1e3)
		}
		switch {
		case e.Kind == fsm.EvGranted:
			counts.grants++
		case e.Kind != fsm.EvReleased:
		case e.Reason == fsm.ReasonExpired || e.Reason == fsm.ReasonSession:
			counts.expiries++
		case e.Reason == fsm.ReasonForced:
			if counts.forced++; *forcedAt != idx {
				*forcedAt = idx
				n.forced.record(idx, r.Events)
			}
		default:
			counts.releases++
		}
	}
}

// Apply is raft.FSM's single-entry form; raft uses ApplyBatch.
func (f *fsmAdapter) Apply(l *raft.Log) interface{} {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// Snapshot encodes the table under the node's read lock into unlinked
// files in DataDir, key records in map order; Persist sorts them into
// raft's sink while new entries are applied (snapshot.go says why this
// way).
func (f *fsmAdapter) Snapshot() (raft.FSMSnapshot, error) {
	n := (*Node)(f)
	if err := n.Halted(); err != nil {
		// The table is behind the index raft would label the snapshot
		// with: a snapshot would let raft drop entries never applied.
		return nil, fmt.Errorf("cluster: snapshot: halted: %w", err)
	}
	s, err := newFileSnapshot(n.cfg.Disk, n.cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("cluster: snapshot: %w", err)
	}
	s.freeMemory = n.cfg.FreeMemoryAfterSnapshot
	s.log = n.log
	start := time.Now()
	n.mu.RLock()
	err = s.encode(n.table.SnapshotUnordered)
	idx := n.table.AppliedIndex()
	n.mu.RUnlock()
	paused := time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("cluster: snapshot: %w", err)
	}
	// Applies wait this long: worth seeing next to raft's own snapshot
	// lines.
	n.log.Info("snapshot encoded", "index", idx, "bytes", s.order.Size(), "applies_paused", paused, "file_writes", s.writing)
	return s, nil
}

// Restore replaces the table with the snapshot's state. raft hands over
// a reader that serves fsm's 1 MiB window reads straight from the file
// (its bufio.Reader passes large reads through), so no buffer is added.
func (f *fsmAdapter) Restore(rc io.ReadCloser) error {
	n := (*Node)(f)
	defer rc.Close()
	t := fsm.New(n.cfg.FSM)
	if err := t.Restore(rc); err != nil {
		err = fmt.Errorf("cluster: restore: %w", err)
		if errors.Is(err, fsm.ErrNeedVersion) {
			n.halt(err)
		}
		return err
	}
	n.mu.Lock()
	n.table = t
	idx, now := t.AppliedIndex(), t.Now()
	n.renew.noteVersion(t.Version())
	n.mu.Unlock()
	n.history.reset()
	n.setApplied(idx, now, true)
	// Subscribers that keep state about keys (client-side caching) must
	// drop it: the restored table carries no events of what changed.
	n.hub.Dispatch(idx, []fsm.Event{{Kind: fsm.EvRestored}})
	return nil
}

// setApplied publishes a new applied index (force: even a smaller one,
// after a restore) and moves the clock anchor (clockFloor) to the
// table's time now, as of when this node stored the entry at idx (the
// apply time if it was stored before this process began).
//
// The anchor is always the latest applied entry, never an older one that
// would extrapolate further. An older anchor's bound runs ahead of the
// log whenever the leaders' clocks run slower than this node's, by the
// rate difference times the anchor's age, without limit, and a leader
// started from it would end at once a lease its slow predecessor had just
// granted. From the latest entry the bound exceeds any earlier entry's
// time by at most the real time since that entry was stamped (measured
// at the leaders' rates and then at this node's), which is all a lease
// needs. The store time keeps the bound tight where the apply time would
// not: entries in flight when a leader dies are stored before the
// election and applied after it.
func (n *raftReplica) setApplied(idx uint64, now int64, force bool) {
	// Read before the lock: a simulated process pause blocks the clock,
	// and a reader waiting on appliedMu would stop the simulator's
	// virtual time (chanMutex says why).
	mono := n.clock.Now()
	n.appliedMu.Lock()
	if idx > n.applied || force {
		n.applied = idx
	}
	if at, ok := n.storeTimes.applied(idx); ok && at.Before(mono) && !force {
		mono = at
	}
	if mutantAnchor(n.Node, now, force) {
		n.lastApplyTime, n.lastApplyMono = now, mono
	}
	close(n.appliedCh)
	n.appliedCh = make(chan struct{})
	n.appliedMu.Unlock()
}

// clockFloor returns where a new leader on this node may start the
// cluster clock at its monotonic reading m, or 0 before this node applied
// any command: the latest applied entry's time T plus the time this node
// has seen pass since it stored that entry. T was stamped before it was
// stored, so from any earlier entry (a lease's grant among them) the
// cluster clock advances by no more than the real time since that entry
// was stamped, measured at the leaders' and this node's rates: no leader
// change shortens a lease, and the new leader loses only the entry's
// replication latency, not the idle time before the election (DESIGN.md
// "Time").
func (n *raftReplica) clockFloor(m time.Time) int64 {
	n.appliedMu.Lock()
	defer n.appliedMu.Unlock()
	if n.lastApplyTime == 0 {
		return 0
	}
	return n.lastApplyTime + m.Sub(n.lastApplyMono).Milliseconds()
}

// AppliedIndex returns the index of the last entry this node applied.
func (n *raftReplica) AppliedIndex() uint64 {
	idx, _ := n.appliedNext()
	return idx
}

// appliedNext returns the index of the last entry this node applied and
// a channel closed when it grows.
func (n *raftReplica) appliedNext() (uint64, <-chan struct{}) {
	n.appliedMu.Lock()
	defer n.appliedMu.Unlock()
	return n.applied, n.appliedCh
}

// waitApplied blocks until this node applied idx, or ctx ends.
func (n *raftReplica) waitApplied(ctx context.Context, idx uint64) error {
	return lockservice.WaitIndex(ctx, idx, n.appliedNext, n.closed)
}

// WaitCommitted blocks until index is committed by a quorum and applied
// on this node (applied implies committed), or ctx ends.
func (n *raftReplica) WaitCommitted(ctx context.Context, index uint64) error {
	return n.waitApplied(ctx, index)
}

// isSetNX reports whether a Redis command is SET with NX: a Redis client's
// lock acquire, so a successful one (+OK) counts as a grant.
func isSetNX(args [][]byte) bool {
	if len(args) < 4 || !bytes.EqualFold(args[0], []byte("set")) {
		return false
	}
	for _, a := range args[3:] {
		if bytes.EqualFold(a, []byte("nx")) {
			return true
		}
	}
	return false
}

// Subscribe calls fn with every applied entry's events (entries without
// events are skipped), in log order, on the apply path: fn must not
// block. cancel stops the calls; one already under way may still finish
// after cancel returns. The renewals of a batch entry carry their change
// events (fsm.EvChanged, fsm.EvValueChanged) only while an AddChangeDemand
// function asks for them (change_demand.go); every other event always.
func (n *raftReplica) Subscribe(fn func(index uint64, events []fsm.Event)) (cancel func()) {
	return n.hub.Subscribe(fn)
}
