package transport

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// leanPair is a LeanRaft client on one Transport and a LeanRaft server
// on another, whose "raft" answers every RPC from a goroutine.
type leanPair struct {
	cli, srv     *LeanRaft
	target       raft.ServerAddress
	got          chan any // each request the server's raft received
	heartbeats   atomic.Int64
	refuseAppend atomic.Bool
}

func newLeanPair(t *testing.T, edit func(*Config), inFlight int) *leanPair {
	t.Helper()
	srvT := newTransport(t, edit)
	cliT := newTransport(t, edit)
	p := &leanPair{target: raftAddr(srvT), got: make(chan any, 1024)}
	consumer := make(chan raft.RPC)
	p.srv = NewLeanRaft(LeanRaftConfig{Stream: srvT.LeanRaftStreamLayer(), Consumer: consumer, Timeout: 5 * time.Second})
	p.srv.SetHeartbeatHandler(func(rpc raft.RPC) {
		p.heartbeats.Add(1)
		rpc.Respond(&raft.AppendEntriesResponse{Term: 1, Success: true}, nil)
	})
	p.cli = NewLeanRaft(LeanRaftConfig{Stream: cliT.LeanRaftStreamLayer(), Consumer: make(chan raft.RPC), Timeout: 5 * time.Second, MaxInFlight: inFlight})
	done := make(chan struct{})
	// Ends when the test ends (done).
	go func() {
		for {
			select {
			case rpc := <-consumer:
				p.got <- rpc.Command
				switch req := rpc.Command.(type) {
				case *raft.AppendEntriesRequest:
					if p.refuseAppend.Load() {
						rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term}, errors.New("refused here"))
						continue
					}
					last := req.PrevLogEntry
					if n := len(req.Entries); n > 0 {
						last = req.Entries[n-1].Index
					}
					rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: last, Success: true, LocknodeCommitPush: 1}, nil)
				case *raft.RequestVoteRequest:
					rpc.Respond(&raft.RequestVoteResponse{Term: req.Term, Granted: true}, nil)
				case *raft.RequestPreVoteRequest:
					rpc.Respond(&raft.RequestPreVoteResponse{Term: req.Term, Granted: true}, nil)
				case *raft.TimeoutNowRequest:
					rpc.Respond(&raft.TimeoutNowResponse{}, nil)
				}
			case <-done:
				return
			}
		}
	}()
	t.Cleanup(func() {
		p.cli.Close()
		p.srv.Close()
		close(done)
	})
	return p
}

func TestLeanRaftRoundTrips(t *testing.T) {
	p := newLeanPair(t, nil, 1)
	req := sampleAppend(64)
	var resp raft.AppendEntriesResponse
	for i := range 3 { // the second and third reuse the pooled connection
		if err := p.cli.AppendEntries("s", p.target, req, &resp); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		got := (<-p.got).(*raft.AppendEntriesRequest)
		if len(got.Entries) != 64 || !bytes.Equal(got.Entries[63].Data, req.Entries[63].Data) {
			t.Fatalf("server got %d entries", len(got.Entries))
		}
		if !resp.Success || resp.LastLog != req.Entries[63].Index || resp.LocknodeCommitPush != 1 {
			t.Fatalf("response %+v", resp)
		}
	}
	// A heartbeat takes the fast path, not the consumer.
	hb := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{Addr: []byte("x")}, Term: 2}
	if err := p.cli.AppendEntries("s", p.target, hb, &resp); err != nil || p.heartbeats.Load() != 1 {
		t.Fatalf("heartbeat: %v, %d handled", err, p.heartbeats.Load())
	}
	var vr raft.RequestVoteResponse
	if err := p.cli.RequestVote("s", p.target, &raft.RequestVoteRequest{Term: 5}, &vr); err != nil || !vr.Granted || vr.Term != 5 {
		t.Fatalf("vote: %+v %v", vr, err)
	}
	<-p.got
	var pr raft.RequestPreVoteResponse
	if err := p.cli.RequestPreVote("s", p.target, &raft.RequestPreVoteRequest{Term: 6}, &pr); err != nil || !pr.Granted || pr.Term != 6 {
		t.Fatalf("prevote: %+v %v", pr, err)
	}
	<-p.got
	if err := p.cli.TimeoutNow("s", p.target, &raft.TimeoutNowRequest{}, &raft.TimeoutNowResponse{}); err != nil {
		t.Fatalf("timeout now: %v", err)
	}
	<-p.got
	// raft's refusal reaches the caller as an error, beside the answer.
	p.refuseAppend.Store(true)
	err := p.cli.AppendEntries("s", p.target, req, &resp)
	if !errors.Is(err, ErrRemote) || resp.Success {
		t.Fatalf("refused append: %v %+v", err, resp)
	}
	if s := p.cli.Stats(); s.Sent != 8 {
		t.Fatalf("client stats %+v, want 8 sent", s)
	}
	// The server counts an answer once written: after the client read it.
	waitFor(t, 5*time.Second, "8 served", func() bool { return p.srv.Stats().Served == 8 })
}

func TestLeanRaftTooLargeSendsNothing(t *testing.T) {
	p := newLeanPair(t, nil, 1)
	big := &raft.AppendEntriesRequest{Term: 1, Entries: []*raft.Log{{Index: 1, Term: 1, Data: make([]byte, MaxRaftFrame)}}}
	var resp raft.AppendEntriesResponse
	if err := p.cli.AppendEntries("s", p.target, big, &resp); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized append: %v", err)
	}
	if err := p.cli.AppendEntries("s", p.target, sampleAppend(2), &resp); err != nil || !resp.Success {
		t.Fatalf("next append: %v", err)
	}
	waitFor(t, 5*time.Second, "1 served", func() bool { return p.srv.Stats().Served == 1 })
	if s := p.cli.Stats(); s.Sent != 1 {
		t.Fatalf("sent %d, want 1 (the oversized one is never sent)", s.Sent)
	}
}

func TestLeanRaftPipeline(t *testing.T) {
	p := newLeanPair(t, nil, 4)
	pl, err := p.cli.AppendEntriesPipeline("s", p.target)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	const n = 20
	// Ends once it has read n answers or one failed.
	results := make(chan error, n)
	go func() {
		for range n {
			f := <-pl.Consumer()
			err := f.Error()
			if err == nil && f.Response().LastLog != f.Request().Entries[0].Index {
				err = errors.New("answer out of order")
			}
			results <- err
			if err != nil {
				return
			}
		}
	}()
	for i := range n {
		req := &raft.AppendEntriesRequest{Term: 1, PrevLogEntry: uint64(i), Entries: []*raft.Log{{Index: uint64(i + 1), Term: 1, Data: []byte("x")}}}
		if _, err := pl.AppendEntries(req, new(raft.AppendEntriesResponse)); err != nil {
			t.Fatalf("pipelined append %d: %v", i, err)
		}
	}
	for range n {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	one := newLeanPair(t, nil, 1)
	if _, err := one.cli.AppendEntriesPipeline("s", one.target); !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		t.Fatalf("pipeline with MaxInFlight 1: %v", err)
	}
}

// TestLeanRaftDropsBadFrames: a connection that sends a malformed frame
// (here a 1 GB length prefix, then garbage) is closed, nothing reaches
// raft, and the server goes on serving others.
func TestLeanRaftDropsBadFrames(t *testing.T) {
	p := newLeanPair(t, nil, 1)
	for _, bad := range [][]byte{
		{0x40, 0, 0, 0, 1},             // 1 GB
		{0, 0, 0, 3, 9, 0, 0},          // unknown kind
		{0, 0, 0, 4, 1, 0xFF, 0xFF, 1}, // AppendEntries that does not decode
	} {
		c, err := net.Dial("tcp", string(p.target))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(append([]byte{typeRaftLean}, bad...)); err != nil {
			t.Fatal(err)
		}
		// The type byte is acknowledged; then the bad frame drops the
		// connection without an answer.
		var ack [1]byte
		if _, err := io.ReadFull(c, ack[:]); err != nil || ack[0] != typeRaftLean {
			t.Fatalf("acknowledgement %#x, %v", ack[0], err)
		}
		expectDropped(t, c)
		c.Close()
	}
	select {
	case cmd := <-p.got:
		t.Fatalf("a bad frame reached raft: %+v", cmd)
	default:
	}
	var resp raft.AppendEntriesResponse
	if err := p.cli.AppendEntries("s", p.target, sampleAppend(1), &resp); err != nil || !resp.Success {
		t.Fatalf("after bad frames: %v", err)
	}
}

// TestLeanRaftMutualTLS: the lean framing rides the peer port's TLS; a
// dialer without a certificate of the cluster's CA gets no answer.
func TestLeanRaftMutualTLS(t *testing.T) {
	serverTLS, clientTLS := testTLS(t)
	p := newLeanPair(t, func(c *Config) { c.ServerTLS, c.ClientTLS = serverTLS, clientTLS }, 1)
	var resp raft.AppendEntriesResponse
	if err := p.cli.AppendEntries("s", p.target, sampleAppend(3), &resp); err != nil || !resp.Success {
		t.Fatalf("over mutual TLS: %v", err)
	}
	<-p.got
	_, strangerTLS := testTLS(t) // a certificate of another CA
	stranger := newTransport(t, func(c *Config) { c.ClientTLS = strangerTLS })
	sl := NewLeanRaft(LeanRaftConfig{Stream: stranger.LeanRaftStreamLayer(), Consumer: make(chan raft.RPC), Timeout: 2 * time.Second})
	defer sl.Close()
	if err := sl.AppendEntries("s", p.target, sampleAppend(1), &resp); err == nil {
		t.Fatal("a peer of another CA was answered")
	}
	plain := newTransport(t, nil)
	pl := NewLeanRaft(LeanRaftConfig{Stream: plain.LeanRaftStreamLayer(), Consumer: make(chan raft.RPC), Timeout: 2 * time.Second})
	defer pl.Close()
	if err := pl.AppendEntries("s", p.target, sampleAppend(1), &resp); err == nil {
		t.Fatal("a peer without TLS was answered")
	}
	select {
	case cmd := <-p.got:
		t.Fatalf("an unauthenticated request reached raft: %T", cmd)
	default:
	}
}

// BenchmarkRaftAppendRoundTrip: one 64-entry AppendEntries and its
// answer over loopback between two Transports, through raft's
// NetworkTransport (msgpack) and through LeanRaft; the answering "raft"
// is a goroutine. Allocations are both ends'.
func BenchmarkRaftAppendRoundTrip(b *testing.B) {
	req := sampleAppend(64)
	answer := func(consumer <-chan raft.RPC, done <-chan struct{}) {
		for {
			select {
			case rpc := <-consumer:
				rpc.Respond(&raft.AppendEntriesResponse{Term: 7, LastLog: 1 << 40, Success: true}, nil)
			case <-done:
				return
			}
		}
	}
	b.Run("msgpack", func(b *testing.B) {
		srvT, cliT := newTransport(b, nil), newTransport(b, nil)
		srv := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: srvT.RaftStreamLayer(), MaxPool: 3, Timeout: 5 * time.Second, Logger: hclog.NewNullLogger()})
		cli := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: cliT.RaftStreamLayer(), MaxPool: 3, Timeout: 5 * time.Second, Logger: hclog.NewNullLogger()})
		done := make(chan struct{})
		defer func() { close(done); cli.Close(); srv.Close() }()
		// Ends when the benchmark closes done.
		go answer(srv.Consumer(), done)
		b.ReportAllocs()
		for b.Loop() {
			var resp raft.AppendEntriesResponse
			if err := cli.AppendEntries("s", raftAddr(srvT), req, &resp); err != nil || !resp.Success {
				b.Fatal(err)
			}
		}
	})
	b.Run("lean", func(b *testing.B) {
		srvT, cliT := newTransport(b, nil), newTransport(b, nil)
		consumer := make(chan raft.RPC)
		srv := NewLeanRaft(LeanRaftConfig{Stream: srvT.LeanRaftStreamLayer(), Consumer: consumer})
		cli := NewLeanRaft(LeanRaftConfig{Stream: cliT.LeanRaftStreamLayer(), Consumer: make(chan raft.RPC)})
		done := make(chan struct{})
		defer func() { close(done); cli.Close(); srv.Close() }()
		// Ends when the benchmark closes done.
		go answer(consumer, done)
		b.ReportAllocs()
		for b.Loop() {
			var resp raft.AppendEntriesResponse
			if err := cli.AppendEntries("s", raftAddr(srvT), req, &resp); err != nil || !resp.Success {
				b.Fatal(err)
			}
		}
	})
}

// TestLeanRaftRefusedOnlyByOlderReleases: a peer that closes a lean
// connection without acknowledging it (a release before the framing)
// is ErrLeanRefused; a peer of this release that is going down (its
// lean layer closed) is an ordinary failure, not a refusal.
func TestLeanRaftRefusedOnlyByOlderReleases(t *testing.T) {
	// An older release: reads the type byte, closes.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// Ends when the listener is closed.
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var b [1]byte
			_, _ = io.ReadFull(c, b[:])
			c.Close()
		}
	}()
	cli := NewLeanRaft(LeanRaftConfig{Stream: newTransport(t, nil).LeanRaftStreamLayer(), Consumer: make(chan raft.RPC), Timeout: 2 * time.Second})
	defer cli.Close()
	var resp raft.AppendEntriesResponse
	if err := cli.AppendEntries("s", raft.ServerAddress(ln.Addr().String()), sampleAppend(1), &resp); !errors.Is(err, ErrLeanRefused) {
		t.Fatalf("older release: %v, want ErrLeanRefused", err)
	}
	p := newLeanPair(t, nil, 1)
	p.srv.Close()
	err = p.cli.AppendEntries("s", p.target, sampleAppend(1), &resp)
	if err == nil || errors.Is(err, ErrLeanRefused) {
		t.Fatalf("a peer going down: %v, want a failure that is not ErrLeanRefused", err)
	}
}

// TestSilentLeanConnectionsAreClosed: a lean connection that sends only
// its type byte, or part of a first frame, is acknowledged and then
// closed once HandshakeTimeout has passed (the acknowledgement does not
// end the handshake; only an answer does), and nothing reaches raft.
func TestSilentLeanConnectionsAreClosed(t *testing.T) {
	const timeout = 300 * time.Millisecond
	srv := newTransport(t, func(c *Config) { c.HandshakeTimeout = timeout })
	consumer := make(chan raft.RPC, 1)
	lr := NewLeanRaft(LeanRaftConfig{Stream: srv.LeanRaftStreamLayer(), Consumer: consumer})
	defer lr.Close()
	for _, in := range [][]byte{{typeRaftLean}, {typeRaftLean, 0, 0, 0, 40, 1, 3}} {
		c, err := net.Dial("tcp", srv.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := c.Write(in); err != nil {
			t.Fatal(err)
		}
		var ack [1]byte
		if _, err := io.ReadFull(c, ack[:]); err != nil || ack[0] != typeRaftLean {
			t.Fatalf("acknowledgement %#x, %v", ack[0], err)
		}
		expectDropped(t, c)
		if d := time.Since(start); d < timeout/2 {
			t.Fatalf("dropped after %v, before the handshake timeout %v", d, timeout)
		}
		c.Close()
	}
	select {
	case rpc := <-consumer:
		t.Fatalf("a partial frame reached raft: %T", rpc.Command)
	default:
	}
}
