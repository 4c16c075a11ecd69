package mirror

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/locknode/locknode/fsm"
)

// Mirror keeps an external Redis in step with the cluster's lock table, so
// readers that stay on Redis (dashboards, legacy `GET lock:x`, SET NX
// clients pointed at it) see the cluster's locks. Redis is a read replica:
// nothing in the cluster waits for it, and the cluster works when it is
// down.
//
// How it stays correct:
//
//  1. The apply path only enqueues (index, changed lock keys) into a
//     bounded queue; it never waits for Redis. When the queue is full it
//     is dropped and the mirror resyncs from a snapshot.
//  2. The mirror goroutine reads the current state of queued keys from
//     the local table (a stale read: this node's applied state) and writes
//     it. What it writes is therefore at least as new as the event that
//     queued the key, and since a node's applied state only moves forward,
//     per-key order holds.
//  3. Each batch is one Lua script that also checks and advances the index
//     stored in Redis: a batch Redis already has (stored >= upto) is a
//     no-op, one that starts after a gap (stored < base) is refused and
//     the mirror resyncs. Resync = snapshot of every lock at index R, stale
//     keys swept (SCAN), index set to R, then the stream continues after R.
//  4. Only the leader writes. Followers buffer the stream too and trim it
//     to the index stored in Redis, so a new leader resumes from that index
//     when it has every change after it, and resyncs otherwise.
//  5. A write to a mirrored key made by some Redis client is noticed (the
//     string no longer matches the owner the mirror recorded in its meta
//     hash) on the next batch touching the key or on the periodic verify
//     pass, overwritten with the cluster's state and counted as a
//     conflict.
//
// Run drives it; Status, InfoText and Collectors report it.
type Mirror struct {
	cfg Config
	src Source
	log hclog.Logger
	q   *mirrorQueue

	running   atomic.Bool
	resyncReq atomic.Bool
	poke      chan struct{} // capacity 1: wakes Run for a Resync request

	// Written by Run's goroutine only; atomics so Status can read them.
	writing     atomic.Bool // this node is the leader and mirrors
	synced      atomic.Bool // mirrored is known to be Redis's index
	connected   atomic.Bool // the last Redis call succeeded
	mirrored    atomic.Uint64
	resyncs     atomic.Uint64
	conflicts   atomic.Uint64
	batches     atomic.Uint64
	keysWritten atomic.Uint64
	errs        atomic.Uint64
	restarts    atomic.Uint64

	mu         sync.Mutex // guards the fields below
	lastErr    string
	lastResync time.Time
	runID      string

	lagHist    prometheus.Histogram
	collectors []prometheus.Collector
	lagHook    func(time.Duration) // tests: every lag sample
}

// Source is what the mirror needs from a node; *cluster.Node
// implements it. Read and Subscribe are Backend's.
type Source interface {
	// Read runs fn against the local table; the mirror always passes
	// stale = true and must see this node's applied state.
	Read(ctx context.Context, stale bool, fn func(t *fsm.Table, now int64)) error
	// Subscribe calls fn for every entry applied after it returns that
	// has events (others may be skipped), in log order, on the apply path,
	// after the entry is in the table. The mirror's fn never blocks.
	Subscribe(fn func(index uint64, events []fsm.Event)) (cancel func())
	// IsLeader reports whether this node is the raft leader now. It is
	// polled every CheckInterval and before every batch.
	IsLeader() bool
}

// changeDemander is a Source whose batches of renewals report their
// keys' changes only while asked to (cluster.Node.AddChangeDemand).
type changeDemander interface {
	AddChangeDemand(fn func() bool) (remove func())
}

var (
	errMirrorRunning    = errors.New("mirror: already running")
	errMirrorSuperseded = errors.New("mirror: resync superseded by another writer")
	errMirrorScript     = errors.New("mirror: script refused the batch")
)

// New validates cfg and returns a mirror of src; Run starts it.
func New(cfg Config, src Source) (*Mirror, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, fmt.Errorf("%w: nil source", ErrConfig)
	}
	cfg = cfg.withDefaults()
	m := &Mirror{
		cfg:  cfg,
		src:  src,
		log:  cfg.Logger.Named("mirror"),
		q:    newMirrorQueue(cfg.QueueSize),
		poke: make(chan struct{}, 1),
	}
	m.initMetrics()
	return m, nil
}

// Resync asks the mirror to rebuild Redis from a snapshot of the table.
// It returns at once; Status().Resyncs counts completed resyncs. Only the
// leader writes, so on a follower the request waits until this node
// leads (or Run ends).
func (m *Mirror) Resync() {
	m.resyncReq.Store(true)
	select {
	case m.poke <- struct{}{}:
	default:
	}
}

// Run mirrors until ctx ends, then returns nil. It connects to Redis,
// subscribes to src and keeps retrying Redis with back-off; Redis being
// down is not an error. It returns an error only if it cannot start
// (already running, or the first read of src fails). The caller runs it
// on its own goroutine.
func (m *Mirror) Run(ctx context.Context) error {
	if !m.running.CompareAndSwap(false, true) {
		return errMirrorRunning
	}
	defer m.running.Store(false)
	c, err := m.cfg.client()
	if err != nil {
		return err
	}
	defer c.Close()
	rd := &mirrorRedis{c: c, prefix: m.cfg.KeyPrefix, filter: m.cfg.Filter, timeout: m.cfg.OpTimeout}

	if d, ok := m.src.(changeDemander); ok {
		// A renewal moves its key's TTL, which the mirror copies: asked
		// before Subscribe, so every entry applied after the index read
		// below carries its changes.
		remove := d.AddChangeDemand(func() bool { return true })
		defer remove()
	}
	cancel := m.src.Subscribe(m.onApply)
	defer cancel()
	// Everything applied after Subscribe returned reaches onApply, so the
	// table's index read now is where the queue's coverage starts.
	var a0 uint64
	if err := m.src.Read(ctx, true, func(t *fsm.Table, _ int64) { a0 = t.AppliedIndex() }); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("mirror: read the table: %w", err)
	}
	m.q.start(a0)

	l := &mirrorLoop{m: m, rd: rd}
	tick := time.NewTicker(m.cfg.CheckInterval)
	defer tick.Stop()
	var backoff time.Duration
	for {
		ticked := false
		select {
		case <-ctx.Done():
			return nil
		case <-m.q.wake:
		case <-m.poke:
		case <-tick.C:
			ticked = true
		}
		err := l.step(ctx, ticked)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			backoff = 0
			continue
		}
		m.fail(err)
		backoff = min(max(2*backoff, m.cfg.MinBackoff), m.cfg.MaxBackoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// onApply is the Subscribe callback: it runs on the apply path and only
// enqueues.
func (m *Mirror) onApply(index uint64, events []fsm.Event) {
	var keys []string
	for _, e := range events {
		if e.Kind == fsm.EvChanged && mirrorable(m.cfg.Filter, e.Key) {
			keys = append(keys, e.Key)
		}
	}
	var at time.Time
	if len(keys) > 0 {
		at = time.Now()
	}
	m.q.push(index, keys, at)
}

// fail records a Redis (or source) error; the loop backs off and then
// re-reads Redis's index before writing again.
func (m *Mirror) fail(err error) {
	m.errs.Add(1)
	m.connected.Store(false)
	m.synced.Store(false)
	m.mu.Lock()
	m.lastErr = err.Error()
	m.mu.Unlock()
	m.log.Warn("mirror: redis step failed; backing off", "error", err)
}

// mirrorLoop is Run's goroutine-local state.
type mirrorLoop struct {
	m          *Mirror
	rd         *mirrorRedis
	lastVerify time.Time
}

// step does what is due: as a follower, trim the buffer to Redis's index
// (on ticks); as the leader, make sure Redis is in sync, then write every
// queued batch, and on idle ticks check Redis's index and run the verify
// pass when due.
func (l *mirrorLoop) step(ctx context.Context, ticked bool) error {
	m := l.m
	if !m.src.IsLeader() {
		m.writing.Store(false)
		m.synced.Store(false)
		if !ticked {
			return nil
		}
		s, ok, err := l.rd.readIndex(ctx)
		if err != nil {
			return err
		}
		m.connected.Store(true)
		if ok {
			m.mirrored.Store(s)
			m.q.trim(s)
		}
		return nil
	}
	if !m.writing.Swap(true) {
		m.log.Info("mirror: leader; taking over the Redis mirror")
		l.lastVerify = time.Now()
	}
	idle := true
	for {
		if ctx.Err() != nil || !m.src.IsLeader() {
			return nil
		}
		if !m.synced.Load() || m.resyncReq.Load() {
			if err := l.sync(ctx); err != nil {
				return err
			}
			idle = false
		}
		base := m.mirrored.Load()
		if _, cover, _, _ := m.q.marks(); cover > base {
			// Changes after base were dropped (queue overflow).
			m.synced.Store(false)
			continue
		}
		b := m.q.peek(base, m.cfg.BatchSize)
		if b.upto <= base {
			break
		}
		if len(b.keys) == 0 && !ticked {
			// Only entries that changed no mirrored key: advance the
			// index on the next tick, not on every entry.
			break
		}
		if err := l.batch(ctx, base, b); err != nil {
			return err
		}
		idle = false
	}
	if !ticked {
		return nil
	}
	if idle {
		// Idle tick: notice a FLUSHALL or a restart that lost data (a
		// batch notices it by itself).
		s, ok, err := l.rd.readIndex(ctx)
		if err != nil {
			return err
		}
		m.connected.Store(true)
		if !ok || s < m.mirrored.Load() {
			m.log.Info("mirror: redis lost the mirror's index; resyncing", "stored", s, "present", ok)
			m.synced.Store(false)
			return l.sync(ctx)
		}
		if s > m.mirrored.Load() {
			// Another writer (a previous leader) went further.
			m.mirrored.Store(s)
			m.q.trim(s)
		}
	}
	if m.cfg.VerifyInterval > 0 && time.Since(l.lastVerify) >= m.cfg.VerifyInterval {
		if err := l.verify(ctx); err != nil {
			return err
		}
		l.lastVerify = time.Now()
	}
	return nil
}

// batch writes the state of b's keys and advances Redis's index to b.upto.
func (l *mirrorLoop) batch(ctx context.Context, base uint64, b mirrorBatch) error {
	m := l.m
	var states []lockState
	if len(b.keys) > 0 {
		if err := m.src.Read(ctx, true, func(t *fsm.Table, now int64) {
			states, _ = readStates(t, now, b.keys)
		}); err != nil {
			return fmt.Errorf("mirror: read the table: %w", err)
		}
	}
	res, err := l.rd.run(ctx, "batch", "", base, b.upto, states)
	if err != nil {
		return err
	}
	m.connected.Store(true)
	switch res.status {
	case "ok":
		m.mirrored.Store(b.upto)
		m.q.trim(b.upto)
		m.batches.Add(1)
		m.keysWritten.Add(uint64(len(states)))
		l.conflicted(res.conflicts)
		now := time.Now()
		for _, at := range b.stamps {
			d := now.Sub(at)
			m.lagHist.Observe(d.Seconds())
			if m.lagHook != nil {
				m.lagHook(d)
			}
		}
	case "replay":
		// Redis already has this batch (another writer got further).
		m.mirrored.Store(res.stored)
		m.q.trim(res.stored)
	case "gap", "missing":
		m.log.Info("mirror: redis index does not continue the stream; resyncing",
			"status", res.status, "stored", res.stored, "base", base)
		m.synced.Store(false)
	default:
		return fmt.Errorf("%w: %s", errMirrorScript, res.status)
	}
	return nil
}

func (l *mirrorLoop) conflicted(n int64) {
	if n > 0 {
		l.m.conflicts.Add(uint64(n))
		l.m.log.Warn("mirror: overwrote keys a Redis client had changed", "keys", n)
	}
}

// sync makes mirrored equal to Redis's index: resume from it when the
// queue holds every change after it, else (or when asked) resync.
func (l *mirrorLoop) sync(ctx context.Context) error {
	m := l.m
	id, err := l.rd.runID(ctx)
	if err != nil {
		return err
	}
	m.mu.Lock()
	if m.runID != "" && id != m.runID {
		m.restarts.Add(1)
		m.log.Info("mirror: redis restarted", "run_id", id)
	}
	m.runID = id
	m.mu.Unlock()
	s, ok, err := l.rd.readIndex(ctx)
	if err != nil {
		return err
	}
	m.connected.Store(true)
	_, cover, _, _ := m.q.marks()
	if m.resyncReq.Swap(false) || !ok || s < cover {
		if err := l.resync(ctx); err != nil {
			m.resyncReq.Store(true)
			return err
		}
		return nil
	}
	m.mirrored.Store(s)
	m.q.trim(s)
	m.synced.Store(true)
	return nil
}

// resync rebuilds every mirrored key from one snapshot of the table.
func (l *mirrorLoop) resync(ctx context.Context) error {
	m := l.m
	var states []lockState
	var at uint64
	if err := m.src.Read(ctx, true, func(t *fsm.Table, now int64) {
		states, at = readAll(t, now, m.cfg.Filter)
	}); err != nil {
		return fmt.Errorf("mirror: read the table: %w", err)
	}
	// The snapshot reflects every entry up to at; the stream continues
	// after it.
	m.q.trim(at)
	gen := newGen()
	if _, err := l.rd.run(ctx, "begin", gen, 0, 0, nil); err != nil {
		return err
	}
	var conflicts int64
	write := func(ops []lockState) error {
		for len(ops) > 0 {
			n := min(len(ops), m.cfg.BatchSize)
			res, err := l.rd.run(ctx, "resync", gen, 0, 0, ops[:n])
			if err != nil {
				return err
			}
			if res.status != "ok" {
				return errMirrorSuperseded
			}
			conflicts += res.conflicts
			ops = ops[n:]
		}
		return nil
	}
	if err := write(states); err != nil {
		return err
	}
	keep := make(map[string]struct{}, len(states))
	for _, s := range states {
		keep[s.key] = struct{}{}
	}
	names, err := l.rd.stale(ctx, keep)
	if err != nil {
		return err
	}
	dels := make([]lockState, len(names))
	for i, k := range names {
		dels[i] = lockState{key: k}
	}
	if err := write(dels); err != nil {
		return err
	}
	res, err := l.rd.run(ctx, "finish", gen, 0, at, nil)
	if err != nil {
		return err
	}
	if res.status != "ok" {
		return errMirrorSuperseded
	}
	// Counted once the resync landed: a superseded one is retried whole.
	l.conflicted(conflicts)
	m.mirrored.Store(at)
	m.synced.Store(true)
	m.resyncs.Add(1)
	m.mu.Lock()
	m.lastResync = time.Now()
	m.mu.Unlock()
	m.log.Info("mirror: resynced", "index", at, "locks", len(states), "stale_removed", len(names))
	return nil
}

// verify compares every held lock with Redis and rewrites what differs.
func (l *mirrorLoop) verify(ctx context.Context) error {
	m := l.m
	var states []lockState
	if err := m.src.Read(ctx, true, func(t *fsm.Table, now int64) {
		states, _ = readAll(t, now, m.cfg.Filter)
	}); err != nil {
		return fmt.Errorf("mirror: read the table: %w", err)
	}
	for len(states) > 0 {
		n := min(len(states), m.cfg.BatchSize)
		res, err := l.rd.run(ctx, "verify", "", 0, 0, states[:n])
		if err != nil {
			return err
		}
		if res.status == "missing" {
			m.synced.Store(false)
			return nil
		}
		l.conflicted(res.conflicts)
		states = states[n:]
	}
	return nil
}
