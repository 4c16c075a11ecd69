package server

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	gometrics "github.com/hashicorp/go-metrics/compat"
	gmprom "github.com/hashicorp/go-metrics/compat/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// feedRaftMetrics reports what raft reports, with and without labels,
// through m.
func feedRaftMetrics(m *gometrics.Metrics) {
	start := time.Now().Add(-3 * time.Millisecond)
	for i := 0; i < 50; i++ {
		m.MeasureSince([]string{"raft", "commitTime"}, start)
		m.IncrCounter([]string{"raft", "apply"}, 1)
		m.SetGauge([]string{"raft", "commitNumLogs"}, float32(i))
		m.AddSample([]string{"raft", "leader", "lastContact"}, float32(i%7))
		m.MeasureSinceWithLabels([]string{"raft", "replication", "appendEntries", "rpc"}, start,
			[]gometrics.Label{{Name: "peer_id", Value: fmt.Sprintf("n%d", i%2)}})
		m.IncrCounterWithLabels([]string{"raft", "replication", "appendEntries", "logs"}, 2,
			[]gometrics.Label{{Name: "peer_id", Value: "n1"}})
		m.SetGaugeWithLabels([]string{"raft", "peers"}, 3, []gometrics.Label{{Name: "kind", Value: "voter"}})
		m.EmitKey([]string{"raft", "emitted"}, 1)
		m.IncrCounter([]string{"raft", "fsm", "odd name-with/chars=x"}, 1)
	}
}

// gatherText renders what reg serves, a line per sample, without the
// summaries' quantile values (they depend on the timing of the calls):
// names, types, help, labels, counts, sums of what is not timed.
func gatherText(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var lines []string
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			var ls []string
			for _, lp := range m.Label {
				ls = append(ls, lp.GetName()+"="+lp.GetValue())
			}
			line := fmt.Sprintf("%s %s help=%q {%s}", mf.GetName(), mf.GetType(), mf.GetHelp(), strings.Join(ls, ","))
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				line += fmt.Sprintf(" %g", m.Counter.GetValue())
			case dto.MetricType_GAUGE:
				line += fmt.Sprintf(" %g", m.Gauge.GetValue())
			case dto.MetricType_SUMMARY:
				var qs []string
				for _, q := range m.Summary.Quantile {
					qs = append(qs, fmt.Sprint(q.GetQuantile()))
				}
				line += fmt.Sprintf(" count=%d quantiles=%v", m.Summary.GetSampleCount(), qs)
				if !strings.Contains(mf.GetName(), "Time") && !strings.Contains(mf.GetName(), "rpc") {
					line += fmt.Sprintf(" sum=%g", m.Summary.GetSampleSum())
				}
			}
			lines = append(lines, line)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// The lean sink serves what go-metrics' Prometheus sink served for the
// same calls: dashboards and alerts on locknode_raft_* keep working.
func TestRaftSinkMatchesPrometheusSink(t *testing.T) {
	old, err := gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{
		Registerer: prometheus.NewRegistry(), Name: "locknode_raft_metrics", Expiration: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	oldCfg := gometrics.DefaultConfig("locknode")
	oldCfg.EnableHostname, oldCfg.EnableRuntimeMetrics = false, false
	oldM, err := gometrics.New(oldCfg, old)
	if err != nil {
		t.Fatal(err)
	}
	lean := newRaftSink("locknode", "locknode_raft_metrics", time.Minute)
	newCfg := gometrics.DefaultConfig("")
	newCfg.EnableHostname, newCfg.EnableRuntimeMetrics = false, false
	newM, err := gometrics.New(newCfg, lean)
	if err != nil {
		t.Fatal(err)
	}
	feedRaftMetrics(oldM)
	feedRaftMetrics(newM)

	oldReg, newReg := prometheus.NewRegistry(), prometheus.NewRegistry()
	oldReg.MustRegister(old)
	newReg.MustRegister(lean)
	want, got := gatherText(t, oldReg), gatherText(t, newReg)
	if got != want {
		t.Fatalf("lean sink serves\n%s\n\nPrometheus sink served\n%s", got, want)
	}
	if !strings.Contains(got, "locknode_raft_commitTime SUMMARY") || !strings.Contains(got, "count=50") {
		t.Fatalf("commit time missing or miscounted:\n%s", got)
	}
	if !strings.Contains(got, "locknode_raft_fsm_odd_name_with_chars_x COUNTER") {
		t.Fatalf("a name's forbidden characters are not replaced:\n%s", got)
	}
}

// A metric not reported for the expiration leaves the output; one
// reported since the last collection stays, however old its creation.
func TestRaftSinkExpires(t *testing.T) {
	s := newRaftSink("locknode", "locknode_raft_metrics", time.Minute)
	s.IncrCounter([]string{"raft", "state", "leader"}, 1)
	s.AddSample([]string{"raft", "commitTime"}, 1)
	t0 := time.Now()
	names := func(now time.Time) []string {
		var out []string
		for _, m := range s.live(now) {
			var d *prometheus.Desc
			switch {
			case m.c != nil:
				d = m.c.Desc()
			case m.s != nil:
				d = m.s.Desc()
			default:
				d = m.g.Desc()
			}
			out = append(out, d.String())
		}
		sort.Strings(out)
		return out
	}
	if got := names(t0); len(got) != 2 {
		t.Fatalf("fresh metrics: got %v, want 2", got)
	}
	// Only the commit time is reported again.
	s.AddSample([]string{"raft", "commitTime"}, 2)
	got := names(t0.Add(30 * time.Second))
	if len(got) != 2 {
		t.Fatalf("within the expiration: got %v, want both", got)
	}
	got = names(t0.Add(61 * time.Second))
	if len(got) != 1 || !strings.Contains(got[0], "locknode_raft_commitTime") {
		t.Fatalf("after the expiration: got %v, want the commit time alone", got)
	}
	// Reported again, an expired metric comes back (from zero).
	s.IncrCounter([]string{"raft", "state", "leader"}, 1)
	if got := names(t0.Add(62 * time.Second)); len(got) != 2 {
		t.Fatalf("reported again: got %v, want both", got)
	}
}

// Reporting a metric that exists allocates nothing: raft reports per log
// entry.
func TestRaftSinkUpdateAllocs(t *testing.T) {
	s := newRaftSink("locknode", "locknode_raft_metrics", time.Minute)
	key := []string{"raft", "commitTime"}
	labels := []gometrics.Label{{Name: "peer_id", Value: "n2"}}
	s.AddSample(key, 1)
	s.IncrCounterWithLabels(key, 1, labels)
	if n := testing.AllocsPerRun(100, func() {
		s.AddSample(key, 1)
		s.IncrCounterWithLabels(key, 1, labels)
		s.SetGauge(key, 1)
	}); n != 0 {
		t.Fatalf("%v allocations per update, want 0", n)
	}
}

func BenchmarkRaftSink(b *testing.B) {
	for _, tc := range []struct {
		name string
		sink gometrics.MetricSink
		svc  string
	}{
		{"lean", newRaftSink("locknode", "x", time.Minute), ""},
		{"prometheus", func() gometrics.MetricSink {
			s, err := gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{Registerer: prometheus.NewRegistry(), Name: "x", Expiration: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}(), "locknode"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := gometrics.DefaultConfig(tc.svc)
			cfg.EnableHostname, cfg.EnableRuntimeMetrics = false, false
			m, err := gometrics.New(cfg, tc.sink)
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			b.ReportAllocs()
			for b.Loop() {
				m.MeasureSince([]string{"raft", "commitTime"}, start)
				m.IncrCounter([]string{"raft", "apply"}, 1)
			}
		})
	}
}

// Reports from many goroutines while a registry scrapes lose nothing:
// the counter ends at the number of reports.
func TestRaftSinkConcurrent(t *testing.T) {
	s := newRaftSink("locknode", "locknode_raft_metrics", time.Minute)
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	const workers, each = 4, 500
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		// Ends after its reports.
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				s.IncrCounter([]string{"raft", "apply"}, 1)
				s.AddSample([]string{"raft", "commitTime"}, 1)
				s.SetGaugeWithLabels([]string{"raft", "peers"}, float32(i), []gometrics.Label{{Name: "w", Value: "x"}})
			}
		}()
	}
	done := make(chan struct{})
	scraped := make(chan struct{})
	// Ends when the reporters are done.
	go func() {
		defer close(scraped)
		for {
			select {
			case <-done:
				return
			default:
				if _, err := reg.Gather(); err != nil {
					t.Errorf("gather: %v", err)
					return
				}
			}
		}
	}()
	wg.Wait()
	close(done)
	<-scraped
	got := gatherText(t, reg)
	if !strings.Contains(got, fmt.Sprintf("locknode_raft_apply COUNTER help=%q {} %d", "locknode_raft_apply", workers*each)) ||
		!strings.Contains(got, fmt.Sprintf("count=%d", workers*each)) {
		t.Fatalf("after %d reports each:\n%s", workers*each, got)
	}
}
