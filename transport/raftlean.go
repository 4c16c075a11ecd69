package transport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// LeanRaftConfig configures a LeanRaft.
type LeanRaftConfig struct {
	// Stream carries the connections: Transport.LeanRaftStreamLayer.
	Stream raft.StreamLayer
	// Consumer receives the RPCs peers send: the channel raft reads
	// (the same one as raft's other transport feeds, so raft sees one).
	Consumer chan<- raft.RPC
	// Timeout is the I/O deadline of each RPC, as
	// NetworkTransportConfig.Timeout. Default 10s.
	Timeout time.Duration
	// MaxPool is how many idle connections to keep per peer. Default 3.
	MaxPool int
	// MaxInFlight is how many AppendEntries a pipeline keeps in flight
	// per peer; below 2 raft gets no pipeline (one AppendEntries at a
	// time, as NetworkTransportConfig.MaxRPCsInFlight). Default 1.
	MaxInFlight int
	// Logger receives connection-level events. Default: a null logger.
	Logger hclog.Logger
}

// LeanRaft carries raft's AppendEntries, RequestVote, RequestPreVote and
// TimeoutNow in the lean framing (raftwire.go): each request is encoded
// into the connection's reused buffer and written in one Write, each
// answer read into a reused buffer, and a received batch of entries
// costs a handful of allocations whatever its length. It implements the
// RPC methods of raft.Transport; the rest (InstallSnapshot, addresses,
// the consumer channel) belongs to the raft.Transport that embeds it.
type LeanRaft struct {
	cfg      LeanRaftConfig
	log      hclog.Logger
	shutdown chan struct{}
	once     sync.Once

	heartbeat atomic.Pointer[func(raft.RPC)]

	poolMu  sync.Mutex
	pool    map[raft.ServerAddress][]*leanConn
	inMu    sync.Mutex
	inbound map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup // the accept loop and every served connection

	sent, served atomic.Uint64
}

// LeanRaftStats counts the RPCs a LeanRaft completed.
type LeanRaftStats struct {
	// Sent is the requests this node sent and got an answer to.
	Sent uint64
	// Served is the requests of peers this node answered.
	Served uint64
}

// NewLeanRaft starts serving the lean connections of cfg.Stream.
func NewLeanRaft(cfg LeanRaftConfig) *LeanRaft {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.MaxPool <= 0 {
		cfg.MaxPool = 3
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	l := &LeanRaft{
		cfg:      cfg,
		log:      cfg.Logger,
		shutdown: make(chan struct{}),
		pool:     make(map[raft.ServerAddress][]*leanConn),
		inbound:  make(map[net.Conn]struct{}),
	}
	l.wg.Add(1)
	// Ends when the stream layer is closed (Close).
	go func() {
		defer l.wg.Done()
		l.acceptLoop()
	}()
	return l
}

// Stats returns the RPCs completed so far.
func (l *LeanRaft) Stats() LeanRaftStats {
	return LeanRaftStats{Sent: l.sent.Load(), Served: l.served.Load()}
}

// SetHeartbeatHandler implements raft.Transport: heartbeats bypass the
// consumer channel, as with raft's own transport.
func (l *LeanRaft) SetHeartbeatHandler(fn func(raft.RPC)) { l.heartbeat.Store(&fn) }

// Close stops accepting, closes every connection and waits for the
// goroutines serving them. Calls in flight fail.
func (l *LeanRaft) Close() error {
	l.once.Do(func() {
		close(l.shutdown)
		l.cfg.Stream.Close()
		l.inMu.Lock()
		l.closed = true
		for c := range l.inbound {
			c.Close()
		}
		l.inMu.Unlock()
		l.poolMu.Lock()
		for _, cs := range l.pool {
			for _, c := range cs {
				c.conn.Close()
			}
		}
		l.pool = nil
		l.poolMu.Unlock()
	})
	l.wg.Wait()
	return nil
}

// ErrLeanRefused: the peer closed a new lean connection without
// acknowledging its type byte: a release that does not know the framing
// (an unknown connection type). Nothing was served; the caller may send
// the request over raft's own transport.
var ErrLeanRefused = errors.New("transport: the peer does not accept the lean raft framing")

// leanConn is one outgoing connection with its reused buffers; it serves
// one call at a time (or one pipeline).
type leanConn struct {
	target raft.ServerAddress
	conn   net.Conn
	r      *bufio.Reader
	hdr    [raftFrameHeader]byte
	wbuf   []byte
	rbuf   []byte
	acked  bool // the peer's acknowledgement of the type byte has been read
}

// readAck reads the acknowledgement a peer that knows the framing sends
// as soon as it has read the type byte (handleConn), ahead of the first
// answer; a peer of an older release closes the connection instead.
func (c *leanConn) readAck() error {
	if c.acked {
		return nil
	}
	b, err := c.r.ReadByte()
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return fmt.Errorf("%w: %w", ErrLeanRefused, err)
		}
		return err
	}
	if b != typeRaftLean {
		return fmt.Errorf("%w: acknowledgement %#x of a lean raft connection", ErrProtocol, b)
	}
	c.acked = true
	return nil
}

func (l *LeanRaft) getConn(target raft.ServerAddress) (*leanConn, error) {
	l.poolMu.Lock()
	if l.pool == nil {
		l.poolMu.Unlock()
		return nil, ErrClosed
	}
	if cs := l.pool[target]; len(cs) > 0 {
		c := cs[len(cs)-1]
		cs[len(cs)-1] = nil
		l.pool[target] = cs[:len(cs)-1]
		l.poolMu.Unlock()
		return c, nil
	}
	l.poolMu.Unlock()
	conn, err := l.cfg.Stream.Dial(target, l.cfg.Timeout)
	if err != nil {
		return nil, err
	}
	return &leanConn{target: target, conn: conn, r: bufio.NewReaderSize(conn, 16<<10)}, nil
}

func (l *LeanRaft) returnConn(c *leanConn) {
	if cap(c.wbuf) > maxKeptBuffer {
		c.wbuf = nil
	}
	l.poolMu.Lock()
	if l.pool != nil && len(l.pool[c.target]) < l.cfg.MaxPool {
		l.pool[c.target] = append(l.pool[c.target], c)
		l.poolMu.Unlock()
		return
	}
	l.poolMu.Unlock()
	c.conn.Close()
}

// call sends one request (encoded by enc into the connection's buffer)
// and decodes its answer with dec. An encoding error (ErrTooLarge) sends
// nothing.
func (l *LeanRaft) call(target raft.ServerAddress, kind rpcKind,
	enc func([]byte) ([]byte, error), dec func([]byte) (rpcErr, err error)) error {
	c, err := l.getConn(target)
	if err != nil {
		return err
	}
	b, err := enc(c.wbuf)
	c.wbuf = b
	if err != nil {
		l.returnConn(c)
		return err
	}
	fail := func(err error) error {
		c.conn.Close()
		return fmt.Errorf("transport: lean raft %v to %s: %w", kind, target, err)
	}
	if err := c.conn.SetDeadline(time.Now().Add(l.cfg.Timeout)); err != nil {
		return fail(err)
	}
	if _, err := c.conn.Write(b); err != nil {
		return fail(err)
	}
	if err := c.readAck(); err != nil {
		return fail(err)
	}
	k, body, err := readRaftFrame(c.r, &c.hdr, &c.rbuf)
	if err != nil {
		return fail(err)
	}
	if k != kind {
		return fail(fmt.Errorf("%w: answer %v to a %v", ErrProtocol, k, kind))
	}
	rpcErr, err := dec(body)
	if err != nil {
		return fail(err)
	}
	l.sent.Add(1)
	l.returnConn(c)
	return rpcErr
}

// AppendEntries implements raft.Transport. A request longer than
// MaxRaftFrame fails with ErrTooLarge before anything is sent.
func (l *LeanRaft) AppendEntries(_ raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	return l.call(target, rpcKindAppend,
		func(b []byte) ([]byte, error) { return appendAppendRequest(b, args) },
		func(b []byte) (error, error) { return decodeAppendResponse(b, resp) })
}

// RequestVote implements raft.Transport.
func (l *LeanRaft) RequestVote(_ raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	return l.call(target, rpcKindVote,
		func(b []byte) ([]byte, error) { return appendVoteRequest(b, args) },
		func(b []byte) (error, error) { return decodeVoteResponse(b, resp) })
}

// RequestPreVote implements raft.WithPreVote.
func (l *LeanRaft) RequestPreVote(_ raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return l.call(target, rpcKindPreVote,
		func(b []byte) ([]byte, error) { return appendPreVoteRequest(b, args) },
		func(b []byte) (error, error) { return decodePreVoteResponse(b, resp) })
}

// TimeoutNow implements raft.Transport.
func (l *LeanRaft) TimeoutNow(_ raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	return l.call(target, rpcKindTimeoutNow,
		func(b []byte) ([]byte, error) { return appendTimeoutNowRequest(b, args) },
		func(b []byte) (error, error) { return decodeTimeoutNowResponse(b, resp) })
}

func (l *LeanRaft) acceptLoop() {
	for {
		conn, err := l.cfg.Stream.Accept()
		if err != nil {
			// The stream layer fails Accept only once closed.
			return
		}
		l.inMu.Lock()
		if l.closed {
			l.inMu.Unlock()
			conn.Close()
			return
		}
		l.inbound[conn] = struct{}{}
		l.wg.Add(1)
		l.inMu.Unlock()
		// Ends when the connection fails or is closed (by the peer, on
		// a bad frame, or by Close).
		go func() {
			defer l.wg.Done()
			l.serve(conn)
			l.inMu.Lock()
			delete(l.inbound, conn)
			l.inMu.Unlock()
		}()
	}
}

// errShutdown: the transport closed while an RPC waited for raft.
var errShutdown = errors.New("transport: lean raft closed")

// serve answers the requests of one accepted connection, in order, until
// it fails. A malformed frame closes the connection (the stream is out of
// sync): the peer redials.
func (l *LeanRaft) serve(conn net.Conn) {
	defer conn.Close()
	r := bufio.NewReaderSize(conn, 64<<10)
	// One RPC at a time per connection: its answer channel is reused.
	respCh := make(chan raft.RPCResponse, 1)
	var hdr [raftFrameHeader]byte
	var rbuf, wbuf []byte
	for {
		kind, body, err := readRaftFrame(r, &hdr, &rbuf)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				l.log.Warn("lean raft: dropping connection", "remote", conn.RemoteAddr().String(), "error", err)
			}
			return
		}
		wbuf, err = l.handle(kind, body, respCh, wbuf)
		if err != nil {
			if !errors.Is(err, errShutdown) {
				l.log.Warn("lean raft: dropping connection", "remote", conn.RemoteAddr().String(), "rpc", kind.String(), "error", err)
			}
			return
		}
		if _, err := conn.Write(wbuf); err != nil {
			return
		}
		l.served.Add(1)
		if cap(wbuf) > maxKeptBuffer {
			wbuf = nil
		}
		if cap(rbuf) > maxKeptBuffer {
			rbuf = nil
		}
	}
}

// handle decodes one request, has raft answer it and encodes the answer
// into wbuf.
func (l *LeanRaft) handle(kind rpcKind, body []byte, respCh chan raft.RPCResponse, wbuf []byte) ([]byte, error) {
	rpc := raft.RPC{RespChan: respCh}
	heartbeat := false
	var err error
	switch kind {
	case rpcKindAppend:
		req := new(raft.AppendEntriesRequest)
		err = decodeAppendRequest(body, req)
		rpc.Command = req
		heartbeat = isHeartbeat(req)
	case rpcKindVote:
		req := new(raft.RequestVoteRequest)
		err = decodeVoteRequest(body, req)
		rpc.Command = req
	case rpcKindPreVote:
		req := new(raft.RequestPreVoteRequest)
		err = decodePreVoteRequest(body, req)
		rpc.Command = req
	case rpcKindTimeoutNow:
		req := new(raft.TimeoutNowRequest)
		err = decodeTimeoutNowRequest(body, req)
		rpc.Command = req
	default:
		err = fmt.Errorf("%w: unknown raft frame %v", ErrProtocol, kind)
	}
	if err != nil {
		return wbuf, err
	}
	if fn := l.heartbeat.Load(); heartbeat && fn != nil && *fn != nil {
		(*fn)(rpc)
	} else {
		select {
		case l.cfg.Consumer <- rpc:
		case <-l.shutdown:
			return wbuf, errShutdown
		}
	}
	var resp raft.RPCResponse
	select {
	case resp = <-respCh:
	case <-l.shutdown:
		return wbuf, errShutdown
	}
	switch kind {
	case rpcKindAppend:
		out, _ := resp.Response.(*raft.AppendEntriesResponse)
		if out == nil {
			out = &raft.AppendEntriesResponse{}
		}
		return appendAppendResponse(wbuf, out, resp.Error)
	case rpcKindVote:
		out, _ := resp.Response.(*raft.RequestVoteResponse)
		if out == nil {
			out = &raft.RequestVoteResponse{}
		}
		return appendVoteResponse(wbuf, out, resp.Error)
	case rpcKindPreVote:
		out, _ := resp.Response.(*raft.RequestPreVoteResponse)
		if out == nil {
			out = &raft.RequestPreVoteResponse{}
		}
		return appendPreVoteResponse(wbuf, out, resp.Error)
	default:
		out, _ := resp.Response.(*raft.TimeoutNowResponse)
		if out == nil {
			out = &raft.TimeoutNowResponse{}
		}
		return appendTimeoutNowResponse(wbuf, out, resp.Error)
	}
}

// isHeartbeat is raft's own test (net_transport.go): a heartbeat carries
// a term and a leader and nothing else.
func isHeartbeat(req *raft.AppendEntriesRequest) bool {
	leader := req.RPCHeader.Addr
	if len(leader) == 0 {
		//lint:ignore SA1019 an older raft sets only the deprecated field; raft's own heartbeat test reads it too
		leader = req.Leader
	}
	return req.Term != 0 && leader != nil && req.PrevLogEntry == 0 && req.PrevLogTerm == 0 &&
		len(req.Entries) == 0 && req.LeaderCommitIndex == 0
}

// AppendEntriesPipeline implements raft.Transport: with MaxInFlight of
// 2 or more, AppendEntries to target are written one after another on a
// connection of their own without waiting for the answers, which a
// goroutine reads in order.
func (l *LeanRaft) AppendEntriesPipeline(_ raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	if l.cfg.MaxInFlight < 2 {
		return nil, raft.ErrPipelineReplicationNotSupported
	}
	c, err := l.getConn(target)
	if err != nil {
		return nil, err
	}
	p := &leanPipeline{
		l:        l,
		c:        c,
		inflight: make(chan *leanFuture, l.cfg.MaxInFlight-1),
		done:     make(chan raft.AppendFuture, l.cfg.MaxInFlight),
		shutdown: make(chan struct{}),
	}
	// Ends when the connection fails or the pipeline is closed.
	go p.decode()
	return p, nil
}

type leanPipeline struct {
	l        *LeanRaft
	c        *leanConn
	inflight chan *leanFuture
	done     chan raft.AppendFuture
	shutdown chan struct{}
	once     sync.Once
}

// AppendEntries implements raft.AppendPipeline; it blocks while
// MaxInFlight requests wait for their answers.
func (p *leanPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	f := &leanFuture{start: time.Now(), req: args, resp: resp, ready: make(chan struct{})}
	b, err := appendAppendRequest(p.c.wbuf, args)
	p.c.wbuf = b
	if err != nil {
		return nil, err
	}
	if err := p.c.conn.SetWriteDeadline(time.Now().Add(p.l.cfg.Timeout)); err != nil {
		return nil, err
	}
	select {
	case p.inflight <- f:
	case <-p.shutdown:
		return nil, raft.ErrPipelineShutdown
	}
	if _, err := p.c.conn.Write(b); err != nil {
		p.Close()
		return nil, err
	}
	return f, nil
}

func (p *leanPipeline) decode() {
	c := p.c
	for {
		var f *leanFuture
		select {
		case f = <-p.inflight:
		case <-p.shutdown:
			return
		}
		err := c.conn.SetReadDeadline(time.Now().Add(p.l.cfg.Timeout))
		if err == nil {
			err = c.readAck()
		}
		var k rpcKind
		var body []byte
		if err == nil {
			k, body, err = readRaftFrame(c.r, &c.hdr, &c.rbuf)
		}
		if err == nil && k != rpcKindAppend {
			err = fmt.Errorf("%w: answer %v to an AppendEntries", ErrProtocol, k)
		}
		if err == nil {
			var rpcErr error
			rpcErr, err = decodeAppendResponse(body, f.resp)
			if err == nil {
				err = rpcErr
				p.l.sent.Add(1)
			}
		}
		f.err = err
		close(f.ready)
		select {
		case p.done <- f:
		case <-p.shutdown:
			return
		}
		if err != nil {
			// The stream is out of sync or gone: later requests fail.
			p.Close()
			return
		}
	}
}

// Consumer implements raft.AppendPipeline.
func (p *leanPipeline) Consumer() <-chan raft.AppendFuture { return p.done }

// Close implements raft.AppendPipeline: the connection is closed, not
// pooled (answers may be on their way).
func (p *leanPipeline) Close() error {
	p.once.Do(func() {
		close(p.shutdown)
		p.c.conn.Close()
	})
	return nil
}

// leanFuture is one pipelined AppendEntries.
type leanFuture struct {
	start time.Time
	req   *raft.AppendEntriesRequest
	resp  *raft.AppendEntriesResponse
	err   error
	ready chan struct{}
}

func (f *leanFuture) Error() error {
	<-f.ready
	return f.err
}
func (f *leanFuture) Start() time.Time                      { return f.start }
func (f *leanFuture) Request() *raft.AppendEntriesRequest   { return f.req }
func (f *leanFuture) Response() *raft.AppendEntriesResponse { return f.resp }
