package server

import (
	"runtime"
	"sync"
	"time"

	gometrics "github.com/hashicorp/go-metrics/compat"
	gmprom "github.com/hashicorp/go-metrics/compat/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// hashicorp/raft reports its own metrics (commit time, log dispatch and
// store, replication, elections) through go-metrics' process-wide
// global: one sink per process collects them and every node's registry
// serves it. Under `locknode dev`, whose three nodes share a process,
// each node serves the three nodes' raft metrics together.
var (
	raftSinkOnce sync.Once
	raftSink     *gmprom.PrometheusSink
	raftSinkErr  error
)

// exportRaftMetrics makes reg serve raft's metrics as locknode_raft_*.
func exportRaftMetrics(reg prometheus.Registerer) error {
	raftSinkOnce.Do(func() {
		sink, err := gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{
			// Registered below, on each node's registry instead.
			Registerer: prometheus.NewRegistry(),
			Name:       "locknode_raft_metrics",
			// A metric not reported for this long (a follower's leader
			// metrics after it lost leadership) leaves the output.
			Expiration: time.Minute,
		})
		if err != nil {
			raftSinkErr = err
			return
		}
		cfg := gometrics.DefaultConfig("locknode")
		cfg.EnableHostname = false
		cfg.EnableHostnameLabel = false
		cfg.EnableServiceLabel = false
		cfg.EnableRuntimeMetrics = false // the Go collector reports these
		if _, raftSinkErr = gometrics.NewGlobal(cfg, sink); raftSinkErr == nil {
			raftSink = sink
		}
	})
	if raftSinkErr != nil {
		return raftSinkErr
	}
	return reg.Register(raftSink)
}

// buildInfo is locknode_build_info: 1, labelled with what this binary is,
// so dashboards can tell which version each node runs.
func buildInfo(version, commit string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "locknode_build_info",
		Help:        "Always 1; the labels say which build this node runs.",
		ConstLabels: prometheus.Labels{"version": version, "commit": commit, "goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}
