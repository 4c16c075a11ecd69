package cluster

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/transport"
)

var errInjected = errors.New("injected log store failure")

// refusingLogs is an in-memory raft.LogStore whose StoreLogs fails while
// armed, so the follower answers that AppendEntries with Success=false:
// the response that stops raft's pipeline reader.
type refusingLogs struct {
	*raft.InmemStore
	armed   atomic.Int32 // failures still to inject
	refused atomic.Int64 // failures injected so far
}

func (s *refusingLogs) StoreLogs(logs []*raft.Log) error {
	if s.armed.Load() > 0 && s.armed.Add(-1) >= 0 {
		s.refused.Add(1)
		return errInjected
	}
	return s.InmemStore.StoreLogs(logs)
}

func (s *refusingLogs) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

func (s *refusingLogs) lastIndex() uint64 { i, _ := s.LastIndex(); return i }

type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                 { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nopSnap{}, nil }
func (nopFSM) Restore(rc io.ReadCloser) error      { return rc.Close() }

type nopSnap struct{}

func (nopSnap) Persist(sink raft.SnapshotSink) error { return sink.Close() }
func (nopSnap) Release()                             {}

func newNetTransport(tr *transport.Transport, inFlight int) *raft.NetworkTransport {
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:          tr.RaftStreamLayer(),
		MaxPool:         3,
		MaxRPCsInFlight: inFlight,
		Timeout:         5 * time.Second,
		Logger:          hclog.NewNullLogger(),
	})
}

// countingNet counts the pipelines raft opens through a raftNet.
type countingNet struct {
	*raftNet
	opened *atomic.Int64
}

func (c countingNet) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := c.raftNet.AppendEntriesPipeline(id, target)
	if err == nil {
		c.opened.Add(1)
	}
	return p, err
}

type pipeRaft struct {
	id   raft.ServerID
	r    *raft.Raft
	logs *refusingLogs
}

func (p *pipeRaft) String() string { return string(p.id) }
func (p *pipeRaft) isLeader() bool { return p.r.State() == raft.Leader }

// startPipeRafts starts a bare 3-node raft cluster (no locknode FSM) over
// our transport, with the raft.Transport that wrap builds.
func startPipeRafts(t *testing.T, wrap func(*transport.Transport, *raft.NetworkTransport) raft.Transport, inFlight int) []*pipeRaft {
	t.Helper()
	const n = 3
	nets := make([]raft.Transport, n)
	var servers []raft.Server
	for i := range n {
		tr, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		nets[i] = wrap(tr, newNetTransport(tr, inFlight))
		servers = append(servers, raft.Server{ID: raft.ServerID(fmt.Sprint("p", i)), Address: nets[i].LocalAddr()})
	}
	nodes := make([]*pipeRaft, n)
	for i := range n {
		cfg := raft.DefaultConfig()
		cfg.LocalID = servers[i].ID
		// Generous timeouts: the test wants replication, not elections,
		// on a loaded 2-core machine under -race.
		cfg.HeartbeatTimeout = 500 * time.Millisecond
		cfg.ElectionTimeout = 500 * time.Millisecond
		cfg.LeaderLeaseTimeout = 250 * time.Millisecond
		cfg.CommitTimeout = 5 * time.Millisecond
		cfg.Logger = hclog.NewNullLogger()
		logs := &refusingLogs{InmemStore: raft.NewInmemStore()}
		stable := raft.NewInmemStore()
		snaps := raft.NewInmemSnapshotStore()
		if err := raft.BootstrapCluster(cfg, logs, stable, snaps, nets[i], raft.Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
		r, err := raft.NewRaft(cfg, nopFSM{}, logs, stable, snaps, nets[i])
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = &pipeRaft{id: servers[i].ID, r: r, logs: logs}
	}
	// Registered after the transports' cleanups, so it runs before them.
	// Bounded: on the hang this file tests, Shutdown never returns.
	t.Cleanup(func() { _ = shutdownRafts(nodes, 10*time.Second) })
	return nodes
}

// shutdownRafts shuts every node down and waits up to d for all of them.
func shutdownRafts(nodes []*pipeRaft, d time.Duration) error {
	done := make(chan struct{}, len(nodes))
	for _, p := range nodes {
		// Ends when raft has shut down; on the replication hang it never
		// does, and the error below reports that.
		go func() { _ = p.r.Shutdown().Error(); done <- struct{}{} }()
	}
	deadline := time.After(d)
	for range nodes {
		select {
		case <-done:
		case <-deadline:
			return fmt.Errorf("raft.Shutdown did not return within %v\n%s", d, pipelineStacks())
		}
	}
	return nil
}

// pipelineStacks returns the stacks of goroutines inside raft's pipeline
// code: on a hang, the parked send and decode loops.
func pipelineStacks() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "netPipeline") || strings.Contains(g, "pipelineReplicate") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

func pipeLeader(nodes []*pipeRaft) *pipeRaft {
	for _, p := range nodes {
		if p.isLeader() {
			return p
		}
	}
	return nil
}

// waitCond polls cond every millisecond until it holds or d passes.
func waitCond(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// TestPipelineSurvivesRefusedAppends is the regression test for the
// pipelined-replication hang (see raftNet): followers refuse appends
// (Success=false) and leadership moves while the leader is busy
// replicating; every follower must catch up after each refusal and every
// node must shut down. With the bare NetworkTransport at MaxRPCsInFlight 2
// (wrap returning nt instead of a raftNet) it fails within the first few rounds: the follower
// stops receiving entries and the stacks show pipelineReplicate parked in
// netPipeline.AppendEntries and decodeResponses parked on doneCh
// (net_transport.go:885 and :852 in v1.7.3).
func TestPipelineSurvivesRefusedAppends(t *testing.T) {
	tests := []struct {
		name     string
		inFlight int
		lean     bool
	}{
		{"pipelined", 2, false},
		{"pipelined deeper", 4, false},
		{"not pipelined", 1, false},
		{"lean pipelined", 2, true},
		{"lean pipelined deeper", 4, true},
		{"lean not pipelined", 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opened atomic.Int64
			nodes := startPipeRafts(t, func(tr *transport.Transport, nt *raft.NetworkTransport) raft.Transport {
				if !tt.lean {
					return countingNet{raftNet: newRaftNet(nt), opened: &opened}
				}
				return countingNet{raftNet: newLeanRaftNet(nt, transport.LeanRaftConfig{
					Stream: tr.LeanRaftStreamLayer(), Timeout: 5 * time.Second, MaxInFlight: tt.inFlight,
				}, func() bool { return true }), opened: &opened}
			}, tt.inFlight)
			if !waitCond(10*time.Second, func() bool { return pipeLeader(nodes) != nil }) {
				t.Fatal("no leader within 10s")
			}

			// Load: a steady stream of applies on whichever node leads,
			// so raft's send loop always has a trigger ready.
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var applied atomic.Int64
			for range 8 {
				wg.Add(1)
				// Ends when stop is closed.
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						l := pipeLeader(nodes)
						if l == nil {
							time.Sleep(time.Millisecond) // pacing while leadership settles
							continue
						}
						if l.r.Apply([]byte("x"), time.Second).Error() == nil {
							applied.Add(1)
						}
					}
				}()
			}
			stopLoad := sync.OnceFunc(func() { close(stop); wg.Wait() })
			defer stopLoad()

			const rounds = 15
			for round := range rounds {
				l := pipeLeader(nodes)
				if l == nil {
					if !waitCond(10*time.Second, func() bool { l = pipeLeader(nodes); return l != nil }) {
						t.Fatalf("round %d: no leader within 10s", round)
					}
				}
				var f *pipeRaft
				for _, p := range nodes {
					if p != l {
						f = p
						break
					}
				}
				before := f.logs.refused.Load()
				f.logs.armed.Store(1)
				if !waitCond(10*time.Second, func() bool { return f.logs.refused.Load() > before }) {
					t.Fatalf("round %d: follower %v refused nothing within 10s", round, f)
				}
				// The follower must receive entries again: at least
				// the leader's last index at the refusal.
				target := l.logs.lastIndex()
				if !waitCond(10*time.Second, func() bool { return f.logs.lastIndex() >= target }) {
					t.Fatalf("round %d: follower %v stuck at index %d < %d after a refused append\n%s",
						round, f, f.logs.lastIndex(), target, pipelineStacks())
				}
			}

			// Leadership moves under load: the old leader's pipelines see
			// a higher term, the other way pipelineDecode stops.
			if l := pipeLeader(nodes); l != nil {
				if err := l.r.LeadershipTransfer().Error(); err != nil {
					t.Logf("leadership transfer: %v", err)
				}
			}
			if !waitCond(10*time.Second, func() bool { return pipeLeader(nodes) != nil }) {
				t.Fatal("no leader within 10s after the transfer")
			}
			n := applied.Load()
			if !waitCond(10*time.Second, func() bool { return applied.Load() > n+100 }) {
				t.Fatalf("fewer than 100 applies within 10s after the transfer\n%s", pipelineStacks())
			}
			stopLoad()
			if err := shutdownRafts(nodes, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			// Each refusal ends a pipeline and raft opens a new one
			// after the next successful plain append: proof that the
			// refusals hit (and the recovery went through) pipelines.
			if got := opened.Load(); tt.inFlight >= 2 && got < rounds {
				t.Errorf("raft opened %d pipelines, want at least %d (one per refusal)", got, rounds)
			} else if tt.inFlight < 2 && got != 0 {
				t.Errorf("raft opened %d pipelines with MaxRPCsInFlight %d", got, tt.inFlight)
			}
		})
	}
}
