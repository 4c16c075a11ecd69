package cluster

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/transport"
)

// raftNet is raft's NetworkTransport with pipelined replication made safe
// to stop. Everything but AppendEntriesPipeline is the embedded transport's
// (Close, PreVote and the rest are promoted, so raft sees the same optional
// interfaces).
//
// Why: with pipelining (NetworkTransportConfig.MaxRPCsInFlight >= 2) the
// hashicorp/raft v1.7.3 pipeline can deadlock, and v1.8.0 has the same
// code (net_transport.go netPipeline, replication.go pipelineReplicate).
// The leader's pipelineDecode goroutine returns as soon as a response says
// Success=false (a follower refused the append: log gap, failed disk write)
// or carries a higher term, or the connection failed; it was the only
// reader of the pipeline's Consumer channel. The send loop in
// pipelineReplicate does not notice at once: its select may pick a ready
// trigger over the closed finishCh and send again. The netPipeline's
// decoder then decodes that response and parks on the now unread doneCh,
// and the next send parks on inprogressCh (both channels have
// MaxRPCsInFlight-2 slots: none at the default 2). Only netPipeline.Close
// unparks them, and that is deferred in the parked pipelineReplicate
// itself. That follower gets no more entries (heartbeats continue, so
// nothing notices) and raft.Shutdown waits forever for the goroutine — a
// hung graceful Close (grafana/pyroscope#5518 shows the same stacks).
//
// The fix is the smallest one on our side of the Transport interface: a
// pipeline wrapper whose own goroutine forwards the responses to raft and,
// right after handing over the response that makes pipelineDecode return
// (it applies the same test), closes the inner pipeline. That closes
// shutdownCh, so the parked send returns ErrPipelineShutdown, raft's send
// loop stops and falls back to plain AppendEntries as it was designed to.
// Upgrading raft does not help (v1.8.0 is unchanged here); writing our own
// AppendPipeline would duplicate raft's wire format.
//
// Start builds raftNet with MaxRPCsInFlight 1 for now (node.go says why:
// measured, not safety), where raft never asks for a pipeline; raftNet
// stays in the path so that raising it cannot bring the hang back.
//
// raftNet also notes when each peer last answered this node's
// replication (contacts): on the leader, each member's last contact.
//
// With lean set, raftNet speaks the lean framing (transport.LeanRaft:
// AppendEntries, votes and TimeoutNow without msgpack) once leanOn
// reports that every member understands it (the cluster version,
// raftnet_lean.go), and raft's own transport before that; it always
// accepts both, and RPCs of both reach raft through one channel. An
// AppendEntries too large for a lean frame, and every InstallSnapshot,
// go over raft's own transport.
type raftNet struct {
	*raft.NetworkTransport
	contacts contactBook

	lean       *transport.LeanRaft // nil: raft's own transport only
	leanOn     func() bool         // whether the lean framing may be used now
	leanActive atomic.Bool         // leanOn held once: it holds for good
	// legacy: peers that closed a lean connection unanswered
	// (ErrLeanRefused: a release before the framing, which only a
	// rollback against the rules puts in an activated cluster), each
	// with when to try the lean framing again. Until then they get raft's
	// own, so such a node still receives the log and halts naming the
	// version it needs instead of being unreachable.
	legacyMu  sync.Mutex
	legacy    map[raft.ServerAddress]time.Time
	legacyAny atomic.Bool // legacy is not empty: only then is it looked at
	log       hclog.Logger
	consumer  chan raft.RPC // both transports' RPCs (with lean)
	done      chan struct{} // closed by Close (with lean)
	closeOnce sync.Once
	wg        sync.WaitGroup
}

var (
	_ raft.Transport   = (*raftNet)(nil)
	_ raft.WithClose   = (*raftNet)(nil)
	_ raft.WithPreVote = (*raftNet)(nil)
)

func newRaftNet(nt *raft.NetworkTransport) *raftNet { return &raftNet{NetworkTransport: nt} }

// newLeanRaftNet is newRaftNet with the lean framing on lcfg.Stream, used
// from when leanOn first reports true. lcfg.Consumer is set here.
func newLeanRaftNet(nt *raft.NetworkTransport, lcfg transport.LeanRaftConfig, leanOn func() bool) *raftNet {
	if lcfg.Logger == nil {
		lcfg.Logger = hclog.NewNullLogger()
	}
	t := &raftNet{
		NetworkTransport: nt,
		log:              lcfg.Logger,
		leanOn:           leanOn,
		consumer:         make(chan raft.RPC),
		done:             make(chan struct{}),
	}
	lcfg.Consumer = t.consumer
	t.lean = transport.NewLeanRaft(lcfg)
	t.wg.Add(1)
	// Ends when Close closes t.done.
	go func() {
		defer t.wg.Done()
		t.forwardOld()
	}()
	return t
}

// forwardOld passes the RPCs raft's own transport receives to the one
// channel raft reads (their answers go straight back to that transport).
func (t *raftNet) forwardOld() {
	in := t.NetworkTransport.Consumer()
	for {
		select {
		case rpc := <-in:
			select {
			case t.consumer <- rpc:
			case <-t.done:
				return
			}
		case <-t.done:
			return
		}
	}
}

// useLean reports whether to send to target in the lean framing.
func (t *raftNet) useLean(target raft.ServerAddress) bool {
	if t.lean == nil {
		return false
	}
	if !t.leanActive.Load() {
		if t.leanOn == nil || !t.leanOn() {
			return false
		}
		t.leanActive.Store(true)
	}
	if !t.legacyAny.Load() {
		return true
	}
	t.legacyMu.Lock()
	defer t.legacyMu.Unlock()
	if until, ok := t.legacy[target]; ok {
		if time.Now().Before(until) {
			return false
		}
		delete(t.legacy, target)
		t.legacyAny.Store(len(t.legacy) > 0)
	}
	return true
}

// legacyRetry is how long a peer that refused the lean framing gets
// raft's own before the lean framing is tried again (a refusal costs a
// dial, so not on every RPC).
const legacyRetry = 30 * time.Second

// refused reports whether err says target refused the lean framing, and
// if so remembers it for legacyRetry.
func (t *raftNet) refused(target raft.ServerAddress, err error) bool {
	if !errors.Is(err, transport.ErrLeanRefused) {
		return false
	}
	t.legacyMu.Lock()
	if t.legacy == nil {
		t.legacy = make(map[raft.ServerAddress]time.Time)
	}
	_, known := t.legacy[target]
	t.legacy[target] = time.Now().Add(legacyRetry)
	t.legacyAny.Store(true)
	t.legacyMu.Unlock()
	if !known {
		t.log.Warn("peer refused the lean raft framing (a release before cluster version 3?); using raft's own framing to it",
			"peer", target, "retry_in", legacyRetry)
	}
	return true
}

// LeanStats returns the lean framing's counts (zero without it).
func (t *raftNet) LeanStats() transport.LeanRaftStats {
	if t.lean == nil {
		return transport.LeanRaftStats{}
	}
	return t.lean.Stats()
}

// Consumer implements raft.Transport.
func (t *raftNet) Consumer() <-chan raft.RPC {
	if t.lean == nil {
		return t.NetworkTransport.Consumer()
	}
	return t.consumer
}

// SetHeartbeatHandler implements raft.Transport.
func (t *raftNet) SetHeartbeatHandler(fn func(raft.RPC)) {
	t.NetworkTransport.SetHeartbeatHandler(fn)
	if t.lean != nil {
		t.lean.SetHeartbeatHandler(fn)
	}
}

// Close implements raft.WithClose: both transports, then the forwarder.
// It returns once no connection handler can call into raft.
func (t *raftNet) Close() error {
	err := t.NetworkTransport.Close()
	if t.lean != nil {
		_ = t.lean.Close()
		t.closeOnce.Do(func() { close(t.done) })
		t.wg.Wait()
	}
	return err
}

// AppendEntriesPipeline implements raft.Transport.
func (t *raftNet) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	var p raft.AppendPipeline
	var err error
	if t.useLean(target) {
		p, err = t.lean.AppendEntriesPipeline(id, target)
	} else {
		p, err = t.NetworkTransport.AppendEntriesPipeline(id, target)
	}
	if err != nil {
		return nil, err
	}
	sp := newStoppingPipeline(p)
	sp.contact = func() { t.contacts.note(id, target) }
	return sp, nil
}

// AppendEntries implements raft.Transport; an answer is a contact.
func (t *raftNet) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	var err error
	if t.useLean(target) {
		err = t.lean.AppendEntries(id, target, args, resp)
		if errors.Is(err, transport.ErrTooLarge) || t.refused(target, err) {
			// Nothing was served: raft's own transport has no frame
			// limit, and every release speaks it.
			err = t.NetworkTransport.AppendEntries(id, target, args, resp)
		}
	} else {
		err = t.NetworkTransport.AppendEntries(id, target, args, resp)
	}
	if err == nil {
		t.contacts.note(id, target)
	}
	return err
}

// RequestVote implements raft.Transport.
func (t *raftNet) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if t.useLean(target) {
		if err := t.lean.RequestVote(id, target, args, resp); !t.refused(target, err) {
			return err
		}
	}
	return t.NetworkTransport.RequestVote(id, target, args, resp)
}

// RequestPreVote implements raft.WithPreVote.
func (t *raftNet) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if t.useLean(target) {
		if err := t.lean.RequestPreVote(id, target, args, resp); !t.refused(target, err) {
			return err
		}
	}
	return t.NetworkTransport.RequestPreVote(id, target, args, resp)
}

// TimeoutNow implements raft.Transport.
func (t *raftNet) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	if t.useLean(target) {
		if err := t.lean.TimeoutNow(id, target, args, resp); !t.refused(target, err) {
			return err
		}
	}
	return t.NetworkTransport.TimeoutNow(id, target, args, resp)
}

// InstallSnapshot implements raft.Transport; an answer is a contact.
func (t *raftNet) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	err := t.NetworkTransport.InstallSnapshot(id, target, args, resp, data)
	if err == nil {
		t.contacts.note(id, target)
	}
	return err
}

// stoppingPipeline forwards an inner pipeline's responses and closes it
// once raft's reader has stopped reading them; see raftNet.
type stoppingPipeline struct {
	inner     raft.AppendPipeline
	out       chan raft.AppendFuture
	closed    chan struct{}
	closeOnce sync.Once
	contact   func() // notes an answer (set before the first one comes)
}

func newStoppingPipeline(inner raft.AppendPipeline) *stoppingPipeline {
	p := &stoppingPipeline{
		inner:  inner,
		out:    make(chan raft.AppendFuture),
		closed: make(chan struct{}),
	}
	// Ends after forwarding the response that stops raft's reader, or
	// when raft closes the pipeline (it always does, deferred in
	// pipelineReplicate).
	go p.forward()
	return p
}

func (p *stoppingPipeline) forward() {
	in := p.inner.Consumer()
	for {
		var f raft.AppendFuture
		select {
		case f = <-in:
		case <-p.closed:
			return
		}
		// Decide before handing f over: Error caches its result in f,
		// and raft reads f as soon as it has it.
		last := stopsReader(f)
		if f.Error() == nil && p.contact != nil {
			p.contact()
		}
		select {
		case p.out <- f:
		case <-p.closed:
			return
		}
		if last {
			// After the hand-over, so raft still sees the response
			// (a higher term makes the leader step down).
			_ = p.inner.Close()
			return
		}
	}
}

// stopsReader reports whether raft's pipelineDecode returns after reading
// f (hashicorp/raft replication.go). A failed round trip counts too: its
// response is not Success, and the connection is useless anyway.
func stopsReader(f raft.AppendFuture) bool {
	if f.Error() != nil {
		return true
	}
	req, resp := f.Request(), f.Response()
	return resp.Term > req.Term || !resp.Success
}

// AppendEntries implements raft.AppendPipeline.
func (p *stoppingPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	return p.inner.AppendEntries(args, resp)
}

// Consumer implements raft.AppendPipeline.
func (p *stoppingPipeline) Consumer() <-chan raft.AppendFuture { return p.out }

// Close implements raft.AppendPipeline.
func (p *stoppingPipeline) Close() error {
	p.closeOnce.Do(func() { close(p.closed) })
	return p.inner.Close()
}
