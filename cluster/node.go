package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/cluster/lockservice"
	"github.com/locknode/locknode/transport"
)

// Errors of this package; the api sentinels (api.ErrNoLeader, ...) are
// wrapped where callers branch on them.
var (
	ErrConfig = lockservice.ErrConfig
	ErrClosed = lockservice.ErrClosed
	// ErrUnknownOutcome: the leader was lost while a request without a
	// request id was in flight; it may or may not have been applied. It
	// also wraps api.ErrNoLeader.
	ErrUnknownOutcome = errors.New("cluster: leader lost, outcome unknown")
	// ErrNotJoined: this node has no raft state of its own and has not
	// heard from a leader yet (it is joining, or waits to be added); it
	// comes wrapped with api.ErrNoLeader, at once.
	ErrNotJoined = errors.New("cluster: this node has not joined a cluster yet")
	// ErrUnknownMember: a membership change names a server that is not
	// in the configuration. It also wraps api.ErrNotFound.
	ErrUnknownMember = errors.New("cluster: no such member")
	// ErrPeerUnreachable: AddVoter's address did not complete the peer
	// handshake; AddVoterForce skips the check. It also wraps
	// api.ErrBadRequest.
	ErrPeerUnreachable = errors.New("cluster: the new member's raft address does not answer")
)

// Transport is what the node needs from its network layer; a
// *transport.Transport implements it. One port carries raft (the stream
// layer) and the node's own RPCs (forwarded commands, read indexes,
// membership changes).
type Transport interface {
	Addr() net.Addr
	RaftStreamLayer() raft.StreamLayer
	Serve(h transport.Handler)
	Call(ctx context.Context, addr string, req []byte) ([]byte, error)
	Close() error
}

// Node is one member of a locknode cluster: a raft server whose state
// machine is an fsm.Table. It accepts any request on any member (a
// follower forwards to the leader) and implements api.Locker and
// redisbridge.Backend. Create it with Start; stop it with Close.
type Node struct {
	// Service is the lock API (cluster/lockservice) over this node as
	// its replica (nodereplica.go).
	*lockservice.Service

	// The node's parts, each owning its state (docs/DESIGN.md "The
	// node's parts"): the table behind raft, the way to the leader, this
	// node's terms as leader, and the cluster's members.
	*raftReplica
	*forwarder
	*leaderTerm
	*roster

	// spanTimes times the applied batches for traced proposals (otel.go).
	spanTimes applyTimes

	cfg   Config
	id    string
	log   hclog.Logger
	clock Clock
	tr    Transport

	readyShare readyShare // Ready's shared evaluations

	// hub: the local waiters and the subscribers (lockservice.Hub).
	hub *lockservice.Hub

	// keyspace: WantKeyspaceEvents' callers (keyspace_demand.go).
	keyspace lockservice.KeyspaceDemand

	reqPrefix string
	reqSeq    atomic.Uint64

	metrics *metrics

	history *history // recent grants and activity samples (history.go)

	// renew coalesces the leader's renewals into OpBatchRenew entries
	// (renew_batch.go).
	renew renewBatcher

	closeOnce sync.Once
	closed    chan struct{}
	wg        sync.WaitGroup // background goroutines
	closeErr  error
}

// Start opens (or creates) the node's storage in cfg.DataDir, starts raft
// and the node's background work, and bootstraps or joins as configured.
// ctx bounds only the start-up (joining an existing cluster); the node
// runs until Close. On an error, whatever was started is stopped again.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	n, err := prepareNode(cfg)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			n.shutdown(false)
		}
	}()
	if err := n.openTransport(); err != nil {
		return nil, err
	}
	snaps, err := n.openStorage()
	if err != nil {
		return nil, err
	}
	sig, hasState, err := n.startRaft(snaps)
	if err != nil {
		return nil, err
	}
	n.hadState = hasState
	n.unjoined.Store(!hasState && !cfg.Bootstrap)
	n.tr.Serve(n.handleRPC)
	n.startLoops(sig)
	if !hasState {
		if err := n.bootstrapOrJoin(ctx); err != nil {
			return nil, err
		}
	}
	n.log.Info("started", "raft", n.Addr(), "existing_state", hasState)
	ok = true
	return n, nil
}

// prepareNode creates the data directory and a Node with its own state
// (newNode) and a request-id prefix no other node or restart uses.
func prepareNode(cfg Config) (*Node, error) {
	if err := diskOrOS(cfg.Disk).MkdirAll(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("cluster: data dir: %w", err)
	}
	var pfx [8]byte
	if _, err := rand.Read(pfx[:]); err != nil {
		return nil, fmt.Errorf("cluster: random: %w", err)
	}
	return newNode(cfg, cfg.ID+"-"+hex.EncodeToString(pfx[:])+"-"), nil
}

// openTransport sets n.tr: the configured Transport, or a new one
// listening on cfg.BindAddr.
func (n *Node) openTransport() error {
	cfg := n.cfg
	n.tr = cfg.Transport
	if n.tr != nil {
		return nil
	}
	tr, err := transport.New(transport.Config{
		BindAddr:         cfg.BindAddr,
		Advertise:        cfg.Advertise,
		Logger:           cfg.Logger.Named("transport"),
		HandshakeTimeout: cfg.PeerHandshakeTimeout,
		MaxConns:         cfg.PeerMaxConns,
		ServerTLS:        cfg.PeerServerTLS,
		ClientTLS:        cfg.PeerClientTLS,
	})
	if err != nil {
		return fmt.Errorf("cluster: transport: %w", err)
	}
	n.tr = tr
	return nil
}

// openStorage opens raft's log and stable store (n.store, n.logs) and
// returns its snapshot store, all in cfg.DataDir.
func (n *raftReplica) openStorage() (raft.SnapshotStore, error) {
	cfg := n.cfg
	store, err := openRaftStorage(cfg.Disk, cfg.DataDir, cfg.LogStore, cfg.StorageFaults, n.log)
	if err != nil {
		return nil, err
	}
	n.store = store
	logs := store.logs
	if cfg.wrapLogStore != nil {
		logs = cfg.wrapLogStore(logs)
	}
	n.logs = timedLogStore{logs, n.metrics.logStore, n.clock, &n.storeTimes, &n.storeHealth}
	snaps, err := newCleanSnapshotStore(cfg.Disk, cfg.DataDir, cfg.SnapshotRetain, cfg.Logger.Named("snapshot"))
	if err != nil {
		return nil, fmt.Errorf("cluster: snapshot store: %w", err)
	}
	return snaps, nil
}

// raftSignals are raft's channels that the background loops drain
// (startLoops): raft blocks on notify, and drops observations nobody
// reads.
type raftSignals struct {
	notify   chan bool
	obs      chan raft.Observation
	observer *raft.Observer
}

// startRaft starts the raft server (n.raft) on the storage and on n.tr's
// stream layer, watching its leader changes. hasState reports whether
// the storage held a raft state before (then the node neither bootstraps
// nor joins).
func (n *raftReplica) startRaft(snaps raft.SnapshotStore) (sig raftSignals, hasState bool, err error) {
	cfg := n.cfg
	// Replication is not pipelined (MaxRPCsInFlight 1: one AppendEntries
	// in flight per follower): raftNet would make pipelining safe, but
	// pipelining splits followers' batches into more log writes to save
	// one round trip, which does not pay on loopback
	// (bench/results/tuning.md).
	n.rtrans = n.newRaftNet(raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:          n.tr.RaftStreamLayer(),
		MaxPool:         3,
		MaxRPCsInFlight: 1,
		Timeout:         cfg.RaftIOTimeout,
		Logger:          cfg.Logger.Named("raft-net"),
	}))

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.CommitTimeout
	rc.MaxAppendEntries = cfg.MaxAppendEntries
	rc.BatchApplyCh = true
	// raft's metrics once, without the per-peer copies kept under older
	// names: each costs a sink call on the replication path.
	rc.NoLegacyTelemetry = true
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.TrailingLogs = cfg.TrailingLogs
	rc.Logger = cfg.Logger.Named("raft")
	sig.notify = make(chan bool, 8)
	rc.NotifyCh = sig.notify

	hasState, err = raft.HasExistingState(n.logs, n.store.stable, snaps)
	if err != nil {
		return sig, false, fmt.Errorf("cluster: reading raft state: %w", err)
	}

	r, err := raft.NewRaft(rc, (*fsmAdapter)(n.Node), n.logs, n.store.stable, snaps, n.rtrans)
	if err != nil {
		return sig, false, fmt.Errorf("cluster: raft: %w", err)
	}
	n.raft = r
	n.noteLeader(false) // none heard of yet
	if f, ok := any(r).(commitPushFilter); ok {
		f.LocknodeWantCommits(n.wantsCommits)
	}

	sig.obs = make(chan raft.Observation, 32)
	sig.observer = raft.NewObserver(sig.obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	r.RegisterObserver(sig.observer)
	return sig, hasState, nil
}

// startLoops starts the node's background goroutines; each ends when the
// node closes (n.wg).
func (n *Node) startLoops(sig raftSignals) {
	n.wg.Add(4)
	// Ends when the node closes.
	go func() {
		defer n.wg.Done()
		n.waiterLeaseLoop()
	}()
	// Ends when the node closes.
	go func() {
		defer n.wg.Done()
		n.diskWatchLoop()
	}()
	// Ends when the node closes (closed is closed after raft shut down).
	go func() {
		defer n.wg.Done()
		defer n.raft.DeregisterObserver(sig.observer)
		n.observeLoop(sig.obs)
	}()
	// Ends when the node closes; each term's goroutines end with the term.
	go func() {
		defer n.wg.Done()
		n.leadershipLoop(sig.notify)
	}()
}

// bootstrapOrJoin makes a node without raft state a member: it
// bootstraps the configured cluster (cfg.Peers, or itself alone), or
// joins one through cfg.Join; with neither it waits to be added.
func (n *roster) bootstrapOrJoin(ctx context.Context) error {
	cfg := n.cfg
	switch {
	case cfg.Bootstrap:
		conf := raft.Configuration{}
		peers := cfg.Peers
		if len(peers) == 0 {
			peers = []Peer{{ID: cfg.ID, Addr: n.Addr()}}
		}
		for _, p := range peers {
			conf.Servers = append(conf.Servers, raft.Server{
				Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr),
			})
		}
		if err := n.raft.BootstrapCluster(conf).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			return fmt.Errorf("cluster: bootstrap: %w", err)
		}
	case len(cfg.Join) > 0:
		return n.join(ctx, cfg.Join)
	}
	return nil
}

// newNode is a Node's own state before raft and the transport are added
// (tests build the FSM side alone from it). cfg has its defaults.
func newNode(cfg Config, reqPrefix string) *Node {
	n := &Node{
		cfg:       cfg,
		id:        cfg.ID,
		log:       cfg.Logger.Named("cluster").With("node", cfg.ID),
		clock:     cfg.Clock,
		hub:       lockservice.NewHub(),
		reqPrefix: reqPrefix,
		closed:    make(chan struct{}),
	}
	n.raftReplica = newRaftReplica(n, cfg.FSM)
	n.forwarder = newForwarder(n)
	n.leaderTerm = newLeaderTerm(n)
	n.roster = &roster{Node: n}
	n.Service = lockservice.New(nodeReplica{n}, n.log, cfg.CancelTimeout, cfg.TracerProvider != nil)
	n.metrics = newMetrics(n)
	n.history = newHistory(cfg.HistoryKeys, cfg.HistoryEntries, newActivity(cfg.ActivityWindow, time.Now))
	return n
}

// ID returns the node's raft server id.
func (n *Node) ID() string { return n.id }

// Addr returns the node's advertised raft/RPC address.
func (n *Node) Addr() string { return n.tr.Addr().String() }

// Raft exposes the underlying raft server for operators and tests
// (stats, snapshots). Do not Apply through it: commands must be stamped
// by the node.
func (n *raftReplica) Raft() *raft.Raft { return n.raft }

// IsLeader reports whether this node is the leader and has set up its
// term's clock (it accepts proposals without forwarding).
func (n *leaderTerm) IsLeader() bool {
	l := n.lead.Load()
	if l == nil {
		return false
	}
	select {
	case <-l.ready:
		return true
	default:
		return false
	}
}

// Leader returns the id and address of the leader this node knows of;
// empty when none is known.
func (n *leaderTerm) Leader() (id, addr string) {
	a, i := n.raft.LeaderWithID()
	return string(i), string(a)
}

// WaitLeader blocks until this node knows a leader that has finished
// setting up its term (as far as this node can tell: on followers, that
// a leader is known), or ctx ends.
func (n *leaderTerm) WaitLeader(ctx context.Context) error {
	for {
		ch := n.leaderChanged()
		if id, _ := n.Leader(); id != "" {
			if id != n.id || n.IsLeader() {
				return nil
			}
			if l := n.lead.Load(); l != nil {
				select {
				case <-l.ready:
					return nil
				case <-l.done:
				case <-ctx.Done():
					return ctx.Err()
				case <-n.closed:
					return ErrClosed
				}
				continue
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-n.closed:
			return ErrClosed
		}
	}
}

// Close stops the node gracefully: a leader first hands leadership to
// another voter (so the cluster does not wait for an election timeout),
// then raft shuts down, storage is closed and blocked requests return
// ErrClosed. The node stays a member: restarting with the same DataDir
// resumes it. Use Leave to leave the cluster for good.
func (n *Node) Close() error {
	return n.shutdown(true)
}

// Kill stops the node abruptly, as a crash would (no leadership
// transfer); storage is closed cleanly. For tests and fault drills.
func (n *Node) Kill() error {
	return n.shutdown(false)
}

func (n *Node) shutdown(graceful bool) error {
	n.closeOnce.Do(func() {
		if n.raft != nil {
			if graceful && n.raft.State() == raft.Leader && n.voters() > 1 {
				if err := n.raft.LeadershipTransfer().Error(); err != nil {
					n.log.Warn("leadership transfer on close failed", "error", err)
				}
			}
			if err := n.raft.Shutdown().Error(); err != nil {
				n.closeErr = err
			}
		}
		close(n.closed)
		if n.tr != nil {
			if err := n.tr.Close(); err != nil && n.closeErr == nil && !errors.Is(err, transport.ErrClosed) {
				n.closeErr = err
			}
		}
		if n.rtrans != nil {
			// Returns once no connection handler can call into raft (a
			// heartbeat writes the term), so the stores may close after.
			_ = n.rtrans.Close()
		}
		n.wg.Wait()
		if n.store != nil {
			if err := n.store.Close(); err != nil && n.closeErr == nil {
				n.closeErr = err
			}
		}
		n.log.Info("closed")
	})
	return n.closeErr
}

func (n *roster) voters() int {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return 0
	}
	c := 0
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			c++
		}
	}
	return c
}

// observeLoop turns raft's leader observations into leaderCh broadcasts.
func (n *leaderTerm) observeLoop(obs chan raft.Observation) {
	for {
		select {
		case o := <-obs:
			if lo, ok := o.Data.(raft.LeaderObservation); ok {
				n.noteLeader(lo.LeaderID != "")
			}
			if lo, ok := o.Data.(raft.LeaderObservation); ok && lo.LeaderID != "" {
				n.metrics.leaderChanges.Inc()
				// A leader heard from: this node is a member now.
				n.unjoined.Store(false)
			}
			n.broadcastLeader()
		case <-n.closed:
			return
		}
	}
}

func (n *leaderTerm) broadcastLeader() {
	n.leaderMu.Lock()
	close(n.leaderCh)
	n.leaderCh = make(chan struct{})
	n.leaderMu.Unlock()
}

// leaderChanged returns a channel closed at the next leader change.
func (n *leaderTerm) leaderChanged() <-chan struct{} {
	n.leaderMu.Lock()
	defer n.leaderMu.Unlock()
	return n.leaderCh
}

// newReqID returns a request id unique across nodes and restarts.
func (n *Node) newReqID() string {
	return fmt.Sprintf("%s%d", n.reqPrefix, n.reqSeq.Add(1))
}

// await waits for a raft future, or until the node closes (which can come
// before raft shuts down). The goroutine that waits for raft's answer ends
// when raft answers, at raft's shutdown at the latest: the fork gives
// every future it accepts its shutdown channel (third_party/raft/FORK.md).
//
// Waiting in place instead (calling f.Error here, which the shutdown
// channel makes as safe) saves a goroutine start and a hand-off per
// request, yet costs CPU per operation: the proposer answers sooner, its
// client's next command reaches the leader sooner, and fewer commands
// share each log write (measured twice with 64 lock-cycling workers: 14
// to 19 instead of 22 to 27 commands per write; 1.2 instead of 1.9 with
// 16 contending on one lock, the next acquire no longer joining the
// hand-off's release). Keep the hand-off unless the leader's batching
// stops depending on it.
func (n *raftReplica) await(f raft.Future) error {
	if rf, ok := f.(*renewFuture); ok {
		// A queued renewal closes its own channel: no goroutine to wait
		// for it (a leader serving forwarded renewals awaits thousands a
		// second).
		select {
		case <-rf.done():
			return rf.err
		case <-n.closed:
			return fmt.Errorf("%w: %w", ErrClosed, raft.ErrRaftShutdown)
		}
	}
	ch := make(chan error, 1)
	// Ends when raft answers f or shuts down (see above).
	go func() { ch <- f.Error() }()
	select {
	case err := <-ch:
		return err
	case <-n.closed:
		return fmt.Errorf("%w: %w", ErrClosed, raft.ErrRaftShutdown)
	}
}
