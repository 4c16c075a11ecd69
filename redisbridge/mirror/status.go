package mirror

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Status is a point-in-time view of a Mirror.
type Status struct {
	Running   bool // Run is active
	Writing   bool // this node is the leader and writes Redis
	Synced    bool // the writer knows Redis's index and streams after it
	Connected bool // the last Redis call succeeded

	// MirroredIndex: Redis reflects every change up to this log index (on a
	// follower, the index last read from Redis).
	MirroredIndex uint64
	// SeenIndex is the last applied index the mirror was told about.
	SeenIndex uint64
	// LagEntries is SeenIndex - MirroredIndex on the writer; 0 elsewhere.
	LagEntries uint64
	// Lag is the age of the oldest change not yet in Redis on the writer.
	Lag time.Duration
	// QueuedKeys is the buffered changed keys (bounded by QueueSize).
	QueuedKeys int

	Resyncs        uint64 // completed resyncs
	Conflicts      uint64 // keys a Redis client had changed, overwritten
	Batches        uint64 // stream batches written
	KeysWritten    uint64 // keys written by stream batches
	Errors         uint64 // failed Redis steps (each followed by back-off)
	Overflows      uint64 // queue overflows (each forces a resync)
	RedisRestarts  uint64 // run_id changes seen
	LastError      string
	LastResync     time.Time // zero if none
	RedisRunID     string
	KeyPrefix      string
	Filter         string
	VerifyInterval time.Duration
}

// Status returns the mirror's current status.
func (m *Mirror) Status() Status {
	seen, _, nkeys, oldest := m.q.marks()
	s := Status{
		Running:        m.running.Load(),
		Writing:        m.writing.Load(),
		Synced:         m.synced.Load(),
		Connected:      m.connected.Load(),
		MirroredIndex:  m.mirrored.Load(),
		SeenIndex:      seen,
		QueuedKeys:     nkeys,
		Resyncs:        m.resyncs.Load(),
		Conflicts:      m.conflicts.Load(),
		Batches:        m.batches.Load(),
		KeysWritten:    m.keysWritten.Load(),
		Errors:         m.errs.Load(),
		Overflows:      m.q.overflows(),
		RedisRestarts:  m.restarts.Load(),
		KeyPrefix:      m.cfg.KeyPrefix,
		Filter:         m.cfg.Filter,
		VerifyInterval: m.cfg.VerifyInterval,
	}
	if s.Writing {
		if seen > s.MirroredIndex {
			s.LagEntries = seen - s.MirroredIndex
		}
		if !oldest.IsZero() {
			s.Lag = time.Since(oldest)
		}
	}
	m.mu.Lock()
	s.LastError, s.LastResync, s.RedisRunID = m.lastErr, m.lastResync, m.runID
	m.mu.Unlock()
	return s
}

// Map returns s in the form of api.Status.Mirror (JSON-friendly; snake
// case keys, durations in ms, times as RFC 3339).
func (s Status) Map() map[string]any {
	out := map[string]any{
		"running":        s.Running,
		"writing":        s.Writing,
		"synced":         s.Synced,
		"connected":      s.Connected,
		"mirrored_index": s.MirroredIndex,
		"seen_index":     s.SeenIndex,
		"lag_entries":    s.LagEntries,
		"lag_ms":         s.Lag.Milliseconds(),
		"queued_keys":    s.QueuedKeys,
		"resyncs":        s.Resyncs,
		"conflicts":      s.Conflicts,
		"batches":        s.Batches,
		"keys_written":   s.KeysWritten,
		"errors":         s.Errors,
		"overflows":      s.Overflows,
		"redis_restarts": s.RedisRestarts,
		"key_prefix":     s.KeyPrefix,
		"filter":         s.Filter,
	}
	if s.LastError != "" {
		out["last_error"] = s.LastError
	}
	if !s.LastResync.IsZero() {
		out["last_resync"] = s.LastResync.UTC().Format(time.RFC3339Nano)
	}
	if s.RedisRunID != "" {
		out["redis_run_id"] = s.RedisRunID
	}
	return out
}

// InfoText returns the mirror's section for the RESP bridge's INFO reply:
// a "# Mirror" header and one field:value line each, CRLF-terminated, as
// Redis formats INFO sections.
func (m *Mirror) InfoText() string {
	s := m.Status()
	b01 := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	var b strings.Builder
	b.WriteString("# Mirror\r\n")
	line := func(k string, v any) { fmt.Fprintf(&b, "%s:%v\r\n", k, v) }
	line("mirror_running", b01(s.Running))
	line("mirror_writing", b01(s.Writing))
	line("mirror_synced", b01(s.Synced))
	line("mirror_connected", b01(s.Connected))
	line("mirror_index", s.MirroredIndex)
	line("mirror_seen_index", s.SeenIndex)
	line("mirror_lag_entries", s.LagEntries)
	line("mirror_lag_ms", s.Lag.Milliseconds())
	line("mirror_queued_keys", s.QueuedKeys)
	line("mirror_resyncs", s.Resyncs)
	line("mirror_conflicts", s.Conflicts)
	line("mirror_batches", s.Batches)
	line("mirror_keys_written", s.KeysWritten)
	line("mirror_errors", s.Errors)
	line("mirror_overflows", s.Overflows)
	line("mirror_redis_restarts", s.RedisRestarts)
	return b.String()
}

// Collectors returns the mirror's Prometheus metrics (locknode_mirror_*)
// for the node's registry.
func (m *Mirror) Collectors() []prometheus.Collector { return m.collectors }

func (m *Mirror) initMetrics() {
	m.lagHist = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "locknode_mirror_write_lag_seconds",
		Help:    "Time from applying an entry to its changes being written to the mirror Redis.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	})
	gauge := func(name, help string, f func(Status) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return f(m.Status()) })
	}
	counter := func(name, help string, f func(Status) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return f(m.Status()) })
	}
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	m.collectors = []prometheus.Collector{
		m.lagHist,
		gauge("locknode_mirror_writing", "1 when this node is the leader and writes the mirror.",
			func(s Status) float64 { return b(s.Writing) }),
		gauge("locknode_mirror_connected", "1 when the last call to the mirror Redis succeeded.",
			func(s Status) float64 { return b(s.Connected) }),
		gauge("locknode_mirror_index", "Log index the mirror Redis reflects.",
			func(s Status) float64 { return float64(s.MirroredIndex) }),
		gauge("locknode_mirror_lag_entries", "Applied entries not yet in the mirror Redis.",
			func(s Status) float64 { return float64(s.LagEntries) }),
		gauge("locknode_mirror_lag_seconds", "Age of the oldest change not yet in the mirror Redis.",
			func(s Status) float64 { return s.Lag.Seconds() }),
		gauge("locknode_mirror_queued_keys", "Changed keys buffered for the mirror.",
			func(s Status) float64 { return float64(s.QueuedKeys) }),
		counter("locknode_mirror_resyncs_total", "Completed resyncs of the mirror from a snapshot.",
			func(s Status) float64 { return float64(s.Resyncs) }),
		counter("locknode_mirror_conflicts_total", "Mirrored keys a Redis client had changed, overwritten.",
			func(s Status) float64 { return float64(s.Conflicts) }),
		counter("locknode_mirror_batches_total", "Stream batches written to the mirror.",
			func(s Status) float64 { return float64(s.Batches) }),
		counter("locknode_mirror_errors_total", "Failed mirror steps (Redis errors).",
			func(s Status) float64 { return float64(s.Errors) }),
		counter("locknode_mirror_overflows_total", "Mirror queue overflows (each forces a resync).",
			func(s Status) float64 { return float64(s.Overflows) }),
	}
}
