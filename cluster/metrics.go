package cluster

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/locknode/locknode/fsm"
)

// metrics are the node's Prometheus collectors, on a registry of its own
// (several nodes may share a process).
type metrics struct {
	reg          *prometheus.Registry
	isLeader     prometheus.Gauge
	applyLatency prometheus.Histogram
	proposals    *prometheus.CounterVec // by op, proposed by this node as leader
	// proposalsBy caches proposals' child of each op: WithLabelValues
	// hashes the label and takes the vector's lock on every proposal.
	proposalsBy  [64]atomic.Pointer[prometheus.Counter]
	forwardCalls *prometheus.CounterVec // RPCs this node sent to the leader, by kind
	rpcServed    *prometheus.CounterVec // RPCs this node served, by kind
	rpcRefused   *prometheus.CounterVec // RPCs refused: the peer is not a member, by kind
	forwarded    prometheus.Counter     // commands this node forwarded and got answered
	// renewalsBatched counts renewals proposed inside OpBatchRenew
	// entries (renew_batch.go).
	renewalsBatched prometheus.Counter
	commands        prometheus.Counter
	grants          prometheus.Counter
	expiries        prometheus.Counter
	// releases and forced are the other ways a hold ends: its owner
	// let go (or closed its session), or an administrator or a Redis
	// DEL/overwrite ended it.
	releases prometheus.Counter
	forced   prometheus.Counter
	// fenceRejects counts fence checks refused for an older token: a
	// former holder writing after its lease ended.
	fenceRejects  prometheus.Counter
	leaderChanges prometheus.Counter
	ticks         prometheus.Counter
	// applyBatch is how long each batch of applies held the table: every
	// read and grant on the node waits that long.
	applyBatch prometheus.Histogram
	maxPause   atomic.Int64 // longest applyBatch observation, ns
	// lockWait is how long blocking acquires served by this node waited
	// in the queue before their grant, by the cluster clock (0 for a
	// grant without a wait).
	lockWait prometheus.Histogram
	// lockHold: how long holds lasted, grant to end, whatever ended them.
	lockHold prometheus.Histogram
	// logStore times raft's log appends (write and fsync), leader and
	// followers alike.
	logStore prometheus.Histogram

	// forwardCallsBy and rpcServedBy cache the children of each kind
	// byte, as proposalsBy does: one of each per forwarded batch.
	forwardCallsBy, rpcServedBy [256]atomic.Pointer[prometheus.Counter]
}

func newMetrics(n *Node) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		isLeader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "locknode_is_leader", Help: "1 when this node is the raft leader."}),
		applyLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "locknode_apply_seconds",
			Help:    "Time from a command's submission on this node to its result (commit and local apply).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		proposals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "locknode_proposals_total", Help: "Commands this node proposed to raft as leader, by op."}, []string{"op"}),
		forwardCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "locknode_forward_calls_total", Help: "Requests this node sent to the leader, by kind."}, []string{"kind"}),
		rpcServed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "locknode_rpc_served_total", Help: "Node-to-node requests this node served, by kind."}, []string{"kind"}),
		rpcRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "locknode_rpc_refused_total", Help: "Node-to-node requests refused because the peer's certificate names no member, by kind."}, []string{"kind"}),
		forwarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "locknode_forwarded_total", Help: "Commands forwarded to the leader and answered."}),
		renewalsBatched: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "locknode_renewals_batched_total", Help: "Renewals this node proposed coalesced into shared log entries."}),
		commands: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "locknode_applied_commands_total", Help: "Commands applied to this node's table."}),
		grants: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "locknode_grants_total", Help: "Lock grants applied (direct, handed to waiters, and Redis SET NX)."}),
		expiries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "locknode_expiries_total", Help: "Holds ended by lease or session expiry."}),
		releases: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "locknode_releases_total", Help: "Holds ended by their owner (release, or closing its session)."}),
		forced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "locknode_forced_releases_total", Help: "Holds ended by a forced release or a Redis DEL or overwrite."}),
		fenceRejects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "locknode_fence_rejections_total", Help: "Fence checks refused because the token was older than the highest seen."}),
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "locknode_leader_changes_total", Help: "Times this node learnt of a new raft leader (itself included)."}),
		ticks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "locknode_ticks_total", Help: "Ticks this node proposed as leader."}),
		applyBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "locknode_apply_batch_seconds",
			Help:    "Time one batch of committed entries held the table while it was applied.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 4, 12),
		}),
		logStore: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "locknode_log_store_seconds",
			Help:    "Time to append one batch of entries to the raft log store, fsync included.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}),
		lockHold: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "locknode_lock_hold_seconds",
			Help:    "How long holds lasted, from grant to release, expiry or forced release (cluster time).",
			Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 1800, 3600, 86400},
		}),
		lockWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "locknode_lock_wait_seconds",
			Help:    "Time blocking acquires served by this node waited in the lock's queue before the grant (cluster clock).",
			Buckets: []float64{0, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300},
		}),
	}
	m.reg.MustRegister(
		m.isLeader, m.applyLatency, m.proposals, m.forwardCalls, m.rpcServed, m.rpcRefused, m.forwarded, m.renewalsBatched,
		m.commands, m.grants, m.expiries, m.releases, m.forced, m.fenceRejects, m.leaderChanges, m.ticks, m.applyBatch, m.lockWait, m.lockHold, m.logStore,
		collectors.NewGoCollector(),
		// process_cpu_seconds_total, resident memory, open files: what a
		// node costs its machine (under `locknode dev`, the whole process).
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.reg.MustRegister(nodeGauges(n, m)...)
	return m
}

// nodeGauges are the gauges read from the node when scraped.
func nodeGauges(n *Node, m *metrics) []prometheus.Collector {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	return []prometheus.Collector{
		gauge("locknode_apply_batch_max_seconds", "Longest time one batch of applies held the table since the node started.",
			func() float64 { return float64(m.maxPause.Load()) / 1e9 }),
		gauge("locknode_cluster_version", "The active cluster version as of the last entry this node applied (docs/UPGRADING.md).",
			func() float64 { return float64(n.ClusterVersion()) }),
		gauge("locknode_apply_halted", "1 when this node stopped applying the log: an entry or snapshot of a cluster version its binary does not run.",
			func() float64 {
				if n.Halted() != nil {
					return 1
				}
				return 0
			}),
		gauge("locknode_applied_index", "Index of the last entry applied on this node.",
			func() float64 { return float64(n.AppliedIndex()) }),
		gauge("locknode_term", "Current raft term.", func() float64 {
			if n.raft == nil {
				return 0
			}
			return float64(n.raft.CurrentTerm())
		}),
		gauge("locknode_commit_index", "Raft commit index known to this node.", func() float64 {
			if n.raft == nil {
				return 0
			}
			return float64(n.raft.CommitIndex())
		}),
		gauge("locknode_data_free_bytes", "Free bytes of the data directory's filesystem (-1: not measured on this platform).", n.dataFree),
		gauge("locknode_data_size_bytes", "Size of the data directory's filesystem in bytes (-1: not measured on this platform).", n.dataSize),
		gauge("locknode_locks", "Locks in the table.", func() float64 { return float64(n.stats().Locks) }),
		gauge("locknode_keys", "Keys in the key space.", func() float64 { return float64(n.stats().Keys) }),
		gauge("locknode_waiters", "Queued waiters.", func() float64 { return float64(n.stats().Waiters) }),
		gauge("locknode_sessions", "Live sessions.", func() float64 { return float64(n.stats().Sessions) }),
		gauge("locknode_keyspace_bytes", "Accounted size of the key space in bytes (what --max-memory bounds).",
			func() float64 { return float64(n.stats().Memory) }),
		gauge("locknode_keyspace_max_bytes", "The key space's memory limit in bytes (--max-memory); 0 = none.",
			func() float64 { return float64(n.maxMemory()) }),
	}
}

// proposed counts one proposal of op.
func (m *metrics) proposed(op fsm.Op) {
	if int(op) >= len(m.proposalsBy) {
		m.proposals.WithLabelValues(opName(op)).Inc()
		return
	}
	p := m.proposalsBy[op].Load()
	if p == nil {
		c := m.proposals.WithLabelValues(opName(op))
		p = &c
		m.proposalsBy[op].Store(p) // a racing store holds the same child
	}
	(*p).Inc()
}

// forwardCall counts one RPC of kind k sent to the leader.
func (m *metrics) forwardCall(k byte) { kindChild(m.forwardCalls, &m.forwardCallsBy, k).Inc() }

// rpcServe counts one RPC of kind k served.
func (m *metrics) rpcServe(k byte) { kindChild(m.rpcServed, &m.rpcServedBy, k).Inc() }

// kindChild returns vec's child labelled with kind k's name, cached in
// cache.
func kindChild(vec *prometheus.CounterVec, cache *[256]atomic.Pointer[prometheus.Counter], k byte) prometheus.Counter {
	if p := cache[k].Load(); p != nil {
		return *p
	}
	c := vec.WithLabelValues(rpcName(k))
	cache[k].Store(&c) // a racing store holds the same child
	return c
}

// applyPause records one batch's hold of the table.
func (m *metrics) applyPause(d time.Duration) {
	m.applyBatch.Observe(d.Seconds())
	for {
		cur := m.maxPause.Load()
		if int64(d) <= cur || m.maxPause.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// applyCounts is what one batch of applies did, for the counters.
type applyCounts struct {
	commands, grants, expiries, releases, forced, fenceRejects int
}

func (m *metrics) applied(c applyCounts) {
	m.commands.Add(float64(c.commands))
	m.grants.Add(float64(c.grants))
	m.expiries.Add(float64(c.expiries))
	m.releases.Add(float64(c.releases))
	m.forced.Add(float64(c.forced))
	m.fenceRejects.Add(float64(c.fenceRejects))
}

func (m *metrics) setLeader(on bool) {
	if on {
		m.isLeader.Set(1)
	} else {
		m.isLeader.Set(0)
	}
}

// Metrics returns the node's Prometheus registry (serve it with
// promhttp.HandlerFor).
func (n *Node) Metrics() *prometheus.Registry { return n.metrics.reg }
