package server

import (
	"sync"
	"sync/atomic"
	"time"

	gometrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"
)

// raftSink is the go-metrics sink raft's own metrics go to. It exports
// what go-metrics' Prometheus sink exports (the same names, types, help,
// labels and summary objectives; a metric leaves the output once not
// reported for the expiration), but an update costs a map lookup under
// a read lock: the Prometheus sink built the metric's name and hash as
// new strings, read the clock and stored a fresh copy of the metric in a
// sync.Map on every call, and raft reports per log entry (commit time,
// apply), which made that sink several percent of a leader's CPU under
// load.
type raftSink struct {
	// prefix is the first part of every name (go-metrics' service name,
	// which the Metrics in front of this sink then does not insert: that
	// cost an allocation per call).
	prefix     string
	name       string // the collector's own name (Describe)
	expiration time.Duration

	mu sync.RWMutex
	m  map[string]*raftMetric // by kind, name and labels (key)
}

// raftMetric is one exported metric: exactly one of g, s, c is set.
type raftMetric struct {
	g prometheus.Gauge
	s prometheus.Summary
	c prometheus.Counter
	// touched says an update came since the last Collect; seen is when
	// a Collect last found it touched (or when it was made), under the
	// sink's write lock. Expiry counts from seen: a metric goes at most
	// one scrape interval later than the Prometheus sink let it go.
	touched atomic.Bool
	seen    time.Time
}

// Metric kinds, the first byte of a key: the Prometheus sink kept the
// three in separate maps, so one name may be a gauge and a counter.
const (
	kindGauge   = 'g'
	kindSummary = 's'
	kindCounter = 'c'
)

// newRaftSink returns a sink whose metrics are named prefix_part_part
// (go-metrics' key parts joined by "_"), and which reports itself to a
// registry as name.
func newRaftSink(prefix, name string, expiration time.Duration) *raftSink {
	return &raftSink{prefix: prefix, name: name, expiration: expiration, m: make(map[string]*raftMetric)}
}

// appendKey appends the map key of a metric: kind, the flattened name
// and the labels, as the Prometheus sink's hash (name;label=value...).
func (s *raftSink) appendKey(b []byte, kind byte, parts []string, labels []gometrics.Label) []byte {
	b = append(b, kind)
	b = appendFlat(b, s.prefix)
	for _, p := range parts {
		b = append(b, '_')
		b = appendFlat(b, p)
	}
	for _, l := range labels {
		b = append(b, ';')
		b = append(b, l.Name...)
		b = append(b, '=')
		b = append(b, l.Value...)
	}
	return b
}

// appendFlat appends p with the characters the Prometheus sink replaces
// in names (space . = - /) as "_".
func appendFlat(b []byte, p string) []byte {
	for i := 0; i < len(p); i++ {
		switch ch := p[i]; ch {
		case ' ', '.', '=', '-', '/':
			b = append(b, '_')
		default:
			b = append(b, ch)
		}
	}
	return b
}

// metric returns the metric of kind for parts and labels, made on first
// use.
func (s *raftSink) metric(kind byte, parts []string, labels []gometrics.Label) *raftMetric {
	var buf [128]byte
	key := s.appendKey(buf[:0], kind, parts, labels)
	s.mu.RLock()
	m := s.m[string(key)] // does not allocate
	s.mu.RUnlock()
	if m == nil {
		m = s.make(kind, key, labels)
	}
	if !m.touched.Load() { // a load: no write to a shared line per call
		m.touched.Store(true)
	}
	return m
}

// make adds the metric of key (appendKey's), or returns the one another
// caller added first.
func (s *raftSink) make(kind byte, key []byte, labels []gometrics.Label) *raftMetric {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.m[string(key)]; m != nil {
		return m
	}
	name := string(key[1:])
	for i := 0; i < len(name); i++ {
		if name[i] == ';' {
			name = name[:i]
			break
		}
	}
	var cl prometheus.Labels
	if len(labels) > 0 {
		cl = make(prometheus.Labels, len(labels))
		for _, l := range labels {
			cl[l.Name] = l.Value
		}
	}
	m := &raftMetric{seen: time.Now()}
	switch kind {
	case kindGauge:
		m.g = prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: name, ConstLabels: cl})
	case kindSummary:
		m.s = prometheus.NewSummary(prometheus.SummaryOpts{
			Name: name, Help: name, ConstLabels: cl,
			MaxAge:     10 * time.Second,
			Objectives: map[float64]float64{0.5: 0.05, 0.9: 0.01, 0.99: 0.001},
		})
	default:
		m.c = prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: name, ConstLabels: cl})
	}
	s.m[string(key)] = m
	return m
}

func (s *raftSink) SetGauge(parts []string, val float32) { s.SetGaugeWithLabels(parts, val, nil) }

func (s *raftSink) SetGaugeWithLabels(parts []string, val float32, labels []gometrics.Label) {
	s.metric(kindGauge, parts, labels).g.Set(float64(val))
}

// EmitKey is dropped, as the Prometheus sink drops it: Prometheus has no
// type for a stream of values.
func (s *raftSink) EmitKey([]string, float32) {}

func (s *raftSink) IncrCounter(parts []string, val float32) {
	s.IncrCounterWithLabels(parts, val, nil)
}

func (s *raftSink) IncrCounterWithLabels(parts []string, val float32, labels []gometrics.Label) {
	s.metric(kindCounter, parts, labels).c.Add(float64(val))
}

func (s *raftSink) AddSample(parts []string, val float32) { s.AddSampleWithLabels(parts, val, nil) }

func (s *raftSink) AddSampleWithLabels(parts []string, val float32, labels []gometrics.Label) {
	s.metric(kindSummary, parts, labels).s.Observe(float64(val))
}

// Describe describes a placeholder, as the Prometheus sink does: the
// metrics come and go, so the collector is unchecked in effect.
func (s *raftSink) Describe(c chan<- *prometheus.Desc) {
	prometheus.NewGauge(prometheus.GaugeOpts{Name: s.name, Help: s.name}).Describe(c)
}

func (s *raftSink) Collect(c chan<- prometheus.Metric) {
	for _, m := range s.live(time.Now()) {
		switch {
		case m.g != nil:
			m.g.Collect(c)
		case m.s != nil:
			m.s.Collect(c)
		default:
			m.c.Collect(c)
		}
	}
}

// live drops the metrics not reported for the expiration as of now and
// returns the others. The channel is fed outside the lock: a slow scrape
// must not hold up raft's updates.
func (s *raftSink) live(now time.Time) []*raftMetric {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*raftMetric, 0, len(s.m))
	for k, m := range s.m {
		if m.touched.Swap(false) {
			m.seen = now
		} else if s.expiration > 0 && m.seen.Add(s.expiration).Before(now) {
			delete(s.m, k)
			continue
		}
		out = append(out, m)
	}
	return out
}
