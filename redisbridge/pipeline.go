package redisbridge

import (
	"strings"
	"sync"

	"github.com/locknode/locknode/fsm"
)

// Pipelined writes group-commit. When a connection has sent more than one
// command (a pipeline), each write that is a single log entry and needs
// no read first (a Redis write command of the FSM, EVAL, EVALSHA and
// their _RO forms) is proposed without waiting for its commit, so a
// pipeline's writes share log writes and replication rounds. A replier
// goroutine writes their replies in order as they complete. Every other
// command first waits until all replies before it are written
// (drainPipe), then runs as it always did: a read sees every write sent
// before it on the connection, and MULTI/EXEC, WATCH, pub/sub, blocking
// commands and errors keep their order and meaning.

// maxPipelined bounds the writes one connection has in flight; the next
// one waits for the oldest reply.
const maxPipelined = 1024

// pipeline is a connection's in-flight writes, oldest first.
// It is one part of a conn: c is the connection it writes replies to.
// mu guards the fields below it; cond (on mu) signals every change.
type pipeline struct {
	c    *conn
	mu   sync.Mutex
	cond sync.Cond

	items  []fsm.Future
	head   int  // items[head:] are in flight
	closed bool // serve ended: the replier stops once items are done
	on     bool // the replier runs
	ended  chan struct{}

	// Only serve uses these. entry is the log entry of every pipelined
	// write, its byte fields aliasing the command's arguments: ApplyAsync
	// keeps neither once it returns (asyncBackend). Holding many locks
	// pipelines a renewal script per lock, and a Command and a copy of
	// its arguments apiece were the largest allocation of the front end.
	// shaSent and sha are the last EVALSHA's SHA1 as sent and in lower
	// case, so a pipeline of one script converts it once.
	entry        fsm.Command
	shaSent, sha string
	// group: an async group is open (asyncGrouper), begun at a write
	// proposed while more input was buffered; ended (endGroup) once the
	// input is used up or before anything waits (drain, end, a full
	// pipeline, a read from the client: flushingReader).
	group bool
}

func (p *pipeline) len() int { return len(p.items) - p.head }

// propose proposes args without waiting when the connection is
// pipelining and the command can group-commit; it reports whether it did
// (the replier then writes the reply). Call from serve, without wmu.
func (p *pipeline) propose(args [][]byte) bool {
	c := p.c
	ab := c.s.async
	if ab == nil || !c.acl.authed || c.tx.active {
		return false
	}
	p.mu.Lock()
	inFlight := p.len()
	p.mu.Unlock()
	if inFlight == 0 && c.rd.Buffered() == 0 {
		return false // a lone command: waiting in place costs less
	}
	cmd := p.command(args)
	if cmd == nil {
		return false
	}
	// Nothing of the entry outlives this call: the next command reuses it.
	defer func() { p.entry = fsm.Command{} }()
	name := c.lowerName(args[0])
	if _, r := c.admit(c.s.commands[name], name, args); r != nil {
		return false // dispatch refuses it, in order
	}
	p.mu.Lock()
	if p.len() >= maxPipelined {
		p.mu.Unlock()
		p.endGroup() // its writes must leave for the replies to come
		p.mu.Lock()
	}
	for p.len() >= maxPipelined {
		p.cond.Wait()
	}
	p.mu.Unlock()
	if !p.group && c.s.grouper != nil && c.rd.Buffered() > 0 {
		// More of the pipeline is here already: its writes go together.
		c.s.grouper.BeginAsyncGroup()
		p.group = true
	}
	cmd.NoForce, cmd.KeysOnly = c.acl.noForce(), c.acl.keysOnly()
	rc := startReqCtx(c.s.cfg.RequestTimeout) // as c.ctx, without a cancel func to allocate
	c.s.stats.command(name)
	counted := c.track.writeStarted()
	reg := c.track.begin(cmd)
	f := ab.ApplyAsync(c.withSpan(rc), cmd)
	if reg != nil || counted {
		f = trackedFuture{f, reg, counted}
	}
	rc.stop() // bounds only a synchronous fallback inside ApplyAsync
	if c.rd.Buffered() == 0 {
		p.endGroup() // the pipeline's end, as far as it has arrived
	}
	p.mu.Lock()
	p.items = append(p.items, f)
	if !p.on {
		p.on = true
		p.ended = make(chan struct{})
		// Ends when serve has ended (pipe.closed) and every reply is
		// written; serve waits for it.
		go p.replier()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	return true
}

// command returns the log entry of a command that can group-commit (the
// pipeline's entry, aliasing args), or nil: then dispatch runs it (and
// writes any error).
func (p *pipeline) command(args [][]byte) *fsm.Command {
	c := p.c
	name := c.lowerName(args[0])
	switch name {
	case "eval", "eval_ro", "evalsha", "evalsha_ro":
		if len(args) < 3 {
			return nil
		}
		keys, argv, msg := splitScriptArgs(args)
		if msg != "" {
			return nil
		}
		ro := name == "eval_ro" || name == "evalsha_ro"
		if name == "eval" || name == "eval_ro" {
			return evalCommand(&p.entry, args[1], keys, argv, ro)
		}
		if len(args[1]) != 40 {
			return nil // dispatch answers NOSCRIPT
		}
		if string(args[1]) != p.shaSent {
			p.shaSent = string(args[1])
			p.sha = strings.ToLower(p.shaSent)
		}
		p.entry = fsm.Command{Op: fsm.OpEvalSHA, Key: p.sha, KeysB: keys, Args: argv, ReadOnly: ro}
		return &p.entry
	}
	if cmd := c.s.commands[name]; cmd == nil || cmd.flags&flagData == 0 || !cmd.spec.Writes() {
		return nil
	}
	p.entry = fsm.Command{Op: fsm.OpRedis, Args: args}
	return &p.entry
}

// replier writes the replies of pipelined writes in order as they
// complete, flushing whenever the next one is not ready.
func (p *pipeline) replier() {
	c := p.c
	defer close(p.ended)
	for {
		p.mu.Lock()
		for p.len() == 0 && !p.closed {
			p.cond.Wait()
		}
		if p.len() == 0 {
			p.mu.Unlock()
			return
		}
		f := p.items[p.head]
		p.mu.Unlock()

		select {
		case <-f.Done():
		default:
			c.wmu.Lock()
			c.flush()
			c.wmu.Unlock()
		}
		r, err := f.Result()
		if tf, ok := f.(trackedFuture); ok {
			if tf.counted {
				c.track.writeDone(r.Index)
			}
			c.s.trk.end(tf.reg, r.Index)
		}

		c.wmu.Lock()
		c.writeResult(r, err)
		p.mu.Lock()
		p.items[p.head] = nil
		p.head++
		empty := p.len() == 0
		if empty {
			p.items, p.head = p.items[:0], 0
		}
		p.cond.Broadcast()
		p.mu.Unlock()
		// Messages queued meanwhile follow this reply (the pusher leaves
		// them while replies are in flight): an invalidation the write
		// caused comes after its reply, as Redis sends it.
		c.out.drain()
		if empty {
			c.flush()
		}
		c.wmu.Unlock()
	}
}

// endGroup ends the open async group, if any. Only serve calls it (a
// read from the client included: flushingReader).
func (p *pipeline) endGroup() {
	if p.group {
		p.group = false
		p.c.s.grouper.EndAsyncGroup()
	}
}

// drain waits until every pipelined write has replied (into the
// write buffer), so what serve writes next comes after. Call without wmu.
func (p *pipeline) drain() {
	p.endGroup()
	p.mu.Lock()
	for p.len() > 0 {
		p.cond.Wait()
	}
	p.mu.Unlock()
}

// busy reports writes in flight.
func (p *pipeline) busy() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.len() > 0
}

// end is serve's last word: it waits for every reply and for the
// replier to end.
func (p *pipeline) end() {
	p.endGroup()
	p.mu.Lock()
	p.closed = true
	on := p.on
	p.cond.Broadcast()
	p.mu.Unlock()
	if on {
		<-p.ended
	}
}
