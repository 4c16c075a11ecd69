package server

import (
	"runtime"
	"sync"
	"time"

	gometrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"
)

// hashicorp/raft reports its own metrics (commit time, log dispatch and
// store, replication, elections) through go-metrics' process-wide
// global: one sink per process collects them and every node's registry
// serves it. Under `locknode dev`, whose three nodes share a process,
// each node serves the three nodes' raft metrics together.
var (
	raftSinkOnce sync.Once
	theRaftSink  *raftSink
	raftSinkErr  error
)

// exportRaftMetrics makes reg serve raft's metrics as locknode_raft_*.
func exportRaftMetrics(reg prometheus.Registerer) error {
	raftSinkOnce.Do(func() {
		// A metric not reported for a minute (a follower's leader metrics
		// after it lost leadership) leaves the output.
		sink := newRaftSink("locknode", "locknode_raft_metrics", time.Minute)
		// The sink puts "locknode" before every name itself: go-metrics'
		// service name would cost an allocation per metric reported.
		cfg := gometrics.DefaultConfig("")
		cfg.EnableHostname = false
		cfg.EnableHostnameLabel = false
		cfg.EnableServiceLabel = false
		cfg.EnableRuntimeMetrics = false // the Go collector reports these
		if _, raftSinkErr = gometrics.NewGlobal(cfg, sink); raftSinkErr == nil {
			theRaftSink = sink
		}
	})
	if raftSinkErr != nil {
		return raftSinkErr
	}
	return reg.Register(theRaftSink)
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
