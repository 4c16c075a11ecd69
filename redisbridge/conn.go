package redisbridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/fsm/rediscmd"
	"github.com/locknode/locknode/fsm/reply"
	"github.com/locknode/locknode/redisbridge/resp"
)

// conn is one client connection. One goroutine (serve) reads and runs its
// commands in order; a second one (pusher), started at the first
// subscription, writes pub/sub messages while serve waits for input.
// wmu serialises everything written to w.
type conn struct {
	s  *Server
	nc net.Conn
	id int64
	rd *resp.Reader

	wmu sync.Mutex
	w   *resp.Writer

	// span is the trace span of the command under way (trace.go), nil
	// when it is not traced. Under wmu.
	span trace.Span

	// The parts a connection is composed of: who it is and what it may
	// do (acl.go), its MULTI block and WATCH list (cmd_tx.go), its pushed
	// messages (outbox.go), its pipelined writes (pipeline.go) and its
	// client-side caching state (tracking.go).
	acl   connACL
	tx    txState
	out   outbox
	pipe  pipeline
	track connTracking

	// Connection state, touched only by serve (under wmu when a command
	// runs).
	name string
	// listed is what CLIENT LIST on another connection shows of this one
	// (name, protocol): serve alone touches name and w.
	listed    atomic.Pointer[listedInfo]
	lastWrite uint64 // index of this connection's last applied write (WAIT)
	// readonly: READONLY was sent; in cluster mode a follower then serves
	// this connection's reads instead of answering MOVED.
	readonly bool
	nameBuf  [32]byte
	quit     bool
	// sync is the log entry of this connection's writes that wait for
	// their outcome (apply), reused from one to the next: a Command is
	// the largest allocation of a request (over 300 bytes), and under
	// lock cycling every request is such a write. nil until the first,
	// and again after an Apply that failed (see apply).
	sync *fsm.Command
	// wdl is the write deadline last set on nc (under wmu): flush moves it
	// only when less than WriteTimeout is left.
	wdl time.Time

	done      chan struct{} // closed when serve ends
	closeOnce sync.Once

	// deadlineSet says serve has set a read deadline to clear.
	deadlineSet bool

	busy   bool // running a command or replies in flight (guarded by s.mu, for Close)
	closed bool // shutdown asked (guarded by s.mu)
}

func (s *Server) newConn(nc net.Conn) *conn {
	c := &conn{
		s:    s,
		nc:   nc,
		id:   s.nextID.Add(1),
		rd:   nil, // below: reads through c.flushingRead
		w:    resp.NewWriter(nc, 0),
		done: make(chan struct{}),
	}
	c.w.OnError = s.stats.errorReply
	c.acl.c, c.out.c, c.pipe.c, c.track.c = c, c, c, c
	c.out.wake = make(chan struct{}, 1)
	c.pipe.cond.L = &c.pipe.mu
	c.acl.authed, c.acl.user = s.anonymous()
	c.acl.armAuthTimeout()
	user := c.acl.user // a copy: serve changes c.acl.user
	c.acl.subUser.Store(&user)
	c.rd = resp.NewReader(flushingReader{c}, s.rcfg)
	return c
}

// flushingReader flushes pending replies before every network read, that
// is whenever the Reader has no complete command left and would wait:
// replies of a pipeline go out even when the next command arrives in
// pieces. TryLock: if wmu is held, its holder (the pusher, or serve while
// a watchHangup goroutine reads) flushes.
type flushingReader struct{ c *conn }

func (r flushingReader) Read(p []byte) (int, error) {
	// The read may wait for the client: the writes it sent so far leave
	// now (a pipeline cut in the middle of a command included).
	r.c.pipe.endGroup()
	if r.c.wmu.TryLock() {
		r.c.flush()
		r.c.wmu.Unlock()
	}
	return r.c.nc.Read(p)
}

// shutdown closes the connection if it is idle (waiting for input, every
// reply flushed); a busy one closes itself after its command replies
// (serve checks c.closed).
func (c *conn) shutdown() {
	c.s.mu.Lock()
	c.closed = true
	busy := c.busy
	c.s.mu.Unlock()
	// A past deadline ends a read in progress or to come (a busy
	// connection whose pipeline ends in a partial command must not keep
	// Close waiting); commands already buffered still run and reply.
	c.nc.SetReadDeadline(time.Unix(1, 0))
	if !busy {
		c.nc.Close()
	}
}

// dispatchSafely runs one command (wmu held) and reports whether the
// connection may go on. A command that panics is a bug in this node: it
// is logged with its stack at ERROR and counted (Server.HandlerPanics),
// the client gets an error and the connection is closed, and the node
// stays up with every other connection served.
func (c *conn) dispatchSafely(args [][]byte) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			c.s.panics.Add(1)
			c.s.cfg.Logger.Error("a RESP command panicked; closing its connection",
				"command", c.lowerName(args[0]), "remote", c.nc.RemoteAddr().String(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			c.w.WriteError("ERR internal error; the connection is closed")
			ok = false
		}
	}()
	c.dispatch(args)
	return true
}

func (c *conn) serve() {
	defer func() {
		c.pipe.end()
		c.wmu.Lock()
		c.flush()
		c.wmu.Unlock()
		c.closeOnce.Do(func() { close(c.done) })
		c.s.hub.unsubscribeAll(c)
		c.nc.Close()
	}()
	for {
		c.s.mu.Lock()
		closing := c.closed
		c.s.mu.Unlock()
		if closing {
			return // the deferred flush sends the replies of what ran
		}
		if c.rd.Buffered() == 0 {
			c.setReadDeadline()
		}
		args, err := c.rd.ReadCommand()
		if err != nil {
			var pe *resp.ProtocolError
			if errors.As(err, &pe) {
				c.pipe.drain()
				c.wmu.Lock()
				c.w.WriteError(pe.Msg)
				c.flush()
				c.wmu.Unlock()
			} else if err != io.EOF && !errors.Is(err, net.ErrClosed) {
				c.s.cfg.Logger.Debug("resp connection read failed", "remote", c.nc.RemoteAddr().String(), "error", err)
			}
			return // the deferred flush: best effort, replies of a pipeline cut by Close
		}
		c.s.mu.Lock()
		closing = c.closed
		c.busy = true
		c.s.mu.Unlock()
		if closing { // Close came while a pipeline was in progress: reply to what ran
			return
		}

		var werr error
		if c.pipe.propose(args) {
			c.track.caching = false // a write ends CLIENT CACHING's next command
		} else {
			c.pipe.drain() // replies go out in command order
			c.wmu.Lock()
			c.out.drain()
			if !c.dispatchSafely(args) {
				c.wmu.Unlock()
				return
			}
			c.track.afterCommand(c.lowerName(args[0]))
			if d := c.acl.authDelay; d > 0 {
				// A failed AUTH's answer waits (auth.Throttle) without
				// holding wmu; Close cancels the wait.
				c.acl.authDelay = 0
				c.wmu.Unlock()
				auth.Wait(c.s.baseCtx, d)
				c.wmu.Lock()
			}
			if c.rd.Buffered() == 0 || c.quit || c.w.Buffered() > 64<<10 {
				werr = c.flush()
			}
			c.wmu.Unlock()
		}

		// Between pipelined commands the connection stays busy: its replies
		// may not be flushed (or its writes committed) yet, so Close must
		// not cut it.
		busy := c.rd.Buffered() > 0 || c.pipe.busy()
		c.s.mu.Lock()
		c.busy = busy
		closing = c.closed
		c.s.mu.Unlock()
		if c.quit || closing || werr != nil {
			return
		}
	}
}

// setReadDeadline sets the deadline of the next read: the idle timeout
// (subscribers exempt), and the auth timeout while not authenticated.
func (c *conn) setReadDeadline() {
	var d time.Time
	if c.s.cfg.IdleTimeout > 0 && !c.s.hub.isSubscribed(c) {
		d = time.Now().Add(c.s.cfg.IdleTimeout)
	}
	if !c.acl.authed && !c.acl.authBy.IsZero() && (d.IsZero() || c.acl.authBy.Before(d)) {
		d = c.acl.authBy
	}
	if d.IsZero() && !c.deadlineSet {
		return
	}
	c.deadlineSet = !d.IsZero()
	c.nc.SetReadDeadline(d)
}

// armAuthTimeout starts the auth timeout of a connection that is not
// authenticated (a new one, or after RESET).
func (a *connACL) armAuthTimeout() {
	c := a.c
	a.authBy = time.Time{}
	if !a.authed && c.s.cfg.AuthTimeout > 0 {
		a.authBy = time.Now().Add(c.s.cfg.AuthTimeout)
	}
}

// flush writes buffered output with the write timeout. Call with wmu held.
func (c *conn) flush() error {
	if c.w.Buffered() == 0 {
		return nil
	}
	// Setting a deadline re-arms a runtime timer: once per flush (one per
	// reply under lock cycling) it was a measurable cost. A deadline set
	// 1/8 further out than WriteTimeout and moved when less than
	// WriteTimeout is left still gives every flush at least WriteTimeout
	// (and at most 9/8 of it).
	wt := c.s.cfg.WriteTimeout
	if now := time.Now(); wt <= 0 || c.wdl.Sub(now) < wt {
		c.wdl = now.Add(wt + wt/8)
		c.nc.SetWriteDeadline(c.wdl)
	}
	err := c.w.Flush()
	if err != nil {
		c.nc.Close() // unblocks serve's read; the connection is dead
	}
	return err
}

// dispatch runs one command. Call with wmu held.
func (c *conn) dispatch(args [][]byte) {
	name := c.lowerName(args[0])
	cmd := c.s.commands[name]
	if cmd == nil {
		c.s.stats.command("unknown")
		c.tx.abort()
		c.w.WriteError(unknownCommand(args))
		return
	}
	c.s.stats.command(name)
	slot, r := c.admit(cmd, name, args)
	if r != nil {
		if r.audit != "" {
			c.s.cfg.Audit.Failure("resp", r.audit)
		}
		if r.abort {
			c.tx.abort()
		}
		c.w.WriteError(r.msg)
		return
	}
	if c.tx.active && cmd.flags&flagTx == 0 {
		c.tx.enqueue(c.s, c.w, cmd, name, args, slot)
		return
	}
	start := time.Now()
	if sp := c.s.startCommandSpan(name, len(args)-1); sp != nil {
		c.span = sp
		defer func() { c.span = nil; sp.End() }()
	}
	cmd.fn(c, args)
	c.observeSlow(cmd, name, args, time.Since(start))
}

// lowerName returns args[0] in lower case; for known commands it does not
// allocate.
func (c *conn) lowerName(b []byte) string {
	if len(b) > len(c.nameBuf) {
		return strings.ToLower(string(b))
	}
	n := c.nameBuf[:len(b)]
	for i, ch := range b {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		n[i] = ch
	}
	if cmd, ok := c.s.commands[string(n)]; ok {
		return cmd.name
	}
	return string(n)
}

// ctx returns a context for one Apply or Read, bounded by RequestTimeout.
// Close does not cancel it: a command in flight finishes and replies (only
// blocking waits, which use baseCtx, are cut short).
func (c *conn) ctx() (context.Context, context.CancelFunc) {
	ctx, cancel := newReqCtx(c.s.cfg.RequestTimeout)
	return c.withSpan(ctx), cancel
}

// apply proposes cmd and returns the FSM's outcome; on failure it has
// written the error reply and ok is false.
func (c *conn) apply(cmd *fsm.Command) (r fsm.Result, ok bool) {
	cmd.NoForce, cmd.KeysOnly = c.acl.noForce(), c.acl.keysOnly()
	rc := startReqCtx(c.s.cfg.RequestTimeout) // as c.ctx, without a cancel func to allocate
	defer rc.stop()
	counted := c.track.writeStarted()
	reg := c.track.begin(cmd)
	r, err := c.s.b.Apply(c.withSpan(rc), cmd)
	if err != nil && cmd == c.sync {
		// A failed Apply may have left cmd behind (a forward queued for
		// the leader when the wait for it ended): it is no longer this
		// connection's to reuse.
		c.sync = nil
	}
	if counted {
		c.track.writeDone(r.Index)
	}
	c.s.trk.end(reg, r.Index)
	return r, c.noteResult(r, err)
}

// noteResult records an applied write's index (for WAIT) and writes the
// error reply of a failed one; it reports success. Call with wmu held.
func (c *conn) noteResult(r fsm.Result, err error) bool {
	if err != nil {
		c.writeErr(err)
		return false
	}
	if r.Index > c.lastWrite {
		c.lastWrite = r.Index
	}
	if r.Err != nil {
		c.writeErr(r.Err)
		return false
	}
	c.acl.auditForced(r.Events)
	return true
}

// writeResult writes the whole reply of an applied entry. Call with wmu
// held.
func (c *conn) writeResult(r fsm.Result, err error) {
	if c.noteResult(r, err) {
		c.w.WriteReply(r.Reply)
	}
}

// applyRedis proposes one Redis command (args owned by the caller's
// Reader: they are copied) and writes its reply.
func (c *conn) applyRedis(args [][]byte) {
	cmd := c.entry()
	cmd.Op, cmd.Args = fsm.OpRedis, resp.CloneArgs(args)
	if r, ok := c.apply(cmd); ok {
		c.w.WriteReply(r.Reply)
	}
}

// entry returns the connection's reusable log entry, zeroed, for one
// write that apply waits for. Backend.Apply keeps no reference to a
// command once it has answered it without an error; after an error apply
// lets the entry go. Writes that do not wait (pipeline.go) take Commands
// of their own.
func (c *conn) entry() *fsm.Command {
	if c.sync == nil {
		c.sync = new(fsm.Command)
	} else {
		*c.sync = fsm.Command{}
	}
	return c.sync
}

// read runs fn in one linearizable read; on failure it writes the error
// and returns false.
func (c *conn) read(fn func(t *fsm.Table, now int64)) bool {
	ctx, cancel := c.ctx()
	defer cancel()
	if err := c.s.b.Read(ctx, false, fn); err != nil {
		c.writeErr(err)
		return false
	}
	return true
}

// readRedis runs a read-only Redis command and writes its reply.
func (c *conn) readRedis(args [][]byte) {
	var r reply.Reply
	var known bool
	if c.track.reads() {
		if s := rediscmd.LookupBytes(args[0]); s != nil {
			c.s.trk.remember(c, s.KeyArgs(args))
		}
	}
	if !c.read(func(t *fsm.Table, now int64) { r, known = t.Read(now, args) }) {
		return
	}
	if !known {
		c.w.WriteError(unknownCommand(args))
		return
	}
	c.w.WriteReply(r)
}

// watchHangup calls cancel if the client hangs up while a command blocks,
// so a blocking acquire leaves the FSM's queue (through the log) instead
// of being granted to nobody. stop ends the watch; call it before reading
// the next command. Input that arrives meanwhile (a pipelined command)
// ends the watch and stays buffered for serve.
func (c *conn) watchHangup(cancel func()) (stop func()) {
	if c.rd.Buffered() > 0 {
		return func() {} // the client already sent more: it is there
	}
	c.nc.SetReadDeadline(time.Time{})
	done := make(chan struct{})
	// Ends when input arrives, the connection fails, or stop sets a past
	// read deadline.
	go func() {
		defer close(done)
		err := c.rd.WaitInput()
		var ne net.Error
		if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			cancel()
		}
	}()
	return func() {
		c.nc.SetReadDeadline(time.Unix(1, 0))
		<-done
		c.nc.SetReadDeadline(time.Time{}) // serve re-arms the idle timeout
	}
}
